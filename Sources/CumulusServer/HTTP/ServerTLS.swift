import CumulusModel
import NIOSSL

/// TLS on the API port (`serve --tls-cert FILE --tls-key FILE`): a certificate chain
/// and its private key, both PEM. Passwords, tokens and signed requests must not cross
/// a network in clear, and a page served over https cannot call an http API. Checked
/// when made, so a missing file, a key that is not the certificate's, or an
/// unreadable one stops `serve` before it listens instead of failing each handshake.
public struct ServerTLS: Sendable {
    /// What NIOSSL serves with: TLS 1.2 at least, its default ciphers otherwise.
    let configuration: TLSConfiguration

    /// TLS with the chain in `certificateFile` (the server's certificate first, then
    /// any intermediates) and the key in `keyFile`; `invalidArguments` naming the file
    /// and the fault otherwise.
    public init(certificateFile: String, keyFile: String) throws {
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMFile(certificateFile)
        } catch {
            throw CumulusError(.invalidArguments, "cannot read the TLS certificate \(certificateFile) as PEM: \(error)")
        }
        guard !chain.isEmpty else {
            throw CumulusError(.invalidArguments, "the TLS certificate file \(certificateFile) holds no certificate")
        }
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(file: keyFile, format: .pem)
        } catch {
            throw CumulusError(.invalidArguments, "cannot read the TLS key \(keyFile) as an unencrypted PEM private key: \(error)")
        }
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        configuration.minimumTLSVersion = .tlsv12
        // A context is what each connection's handshake uses; making one now finds a
        // key that does not match the certificate.
        do {
            _ = try NIOSSLContext(configuration: configuration)
        } catch {
            throw CumulusError(
                .invalidArguments, "the TLS key \(keyFile) does not go with the certificate \(certificateFile): \(error)")
        }
        self.configuration = configuration
    }
}
