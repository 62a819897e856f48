import CumulusStorage
import NIOSSL

/// How `serve` proves itself to etcd and checks etcd in return: a user name and
/// password (etcd's `auth enable`), TLS with a CA of its own, a client certificate,
/// any of them together. The password comes from a file or the environment, never
/// the command line (``password``).
public struct EtcdAccess: Sendable {
    /// The etcd user and password, if etcd has authentication enabled.
    public var credentials: (user: String, password: String)?
    /// TLS for `https://` endpoints: the CA that signed etcd's certificate and, for
    /// client-certificate authentication, this node's certificate and key. `nil`:
    /// the system's trust roots, no client certificate.
    public var tls: TLSConfiguration?

    /// Where the password may come from: `--etcd-password-file` or the environment.
    public static let password = SecretSource(
        name: "the etcd password", fileOption: "--etcd-password-file", environmentVariable: "CUMULUS_ETCD_PASSWORD")

    /// Access with neither password nor TLS settings.
    public static let plain = EtcdAccess()

    /// Access as `user` with `password`, over TLS as `tls` says.
    public init(credentials: (user: String, password: String)? = nil, tls: TLSConfiguration? = nil) {
        self.credentials = credentials
        self.tls = tls
    }

    /// TLS trusting the CA in `caFile` (PEM; `nil`: the system's roots) and presenting
    /// the certificate chain in `certificateFile` with the key in `keyFile` (PEM; both
    /// or neither). A file that cannot be read or parsed is `invalidArgument`.
    public static func tls(caFile: String?, certificateFile: String?, keyFile: String?) throws(StorageError)
        -> TLSConfiguration
    {
        var configuration = TLSConfiguration.makeClientConfiguration()
        do {
            if let caFile { configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(caFile)) }
            if let certificateFile, let keyFile {
                configuration.certificateChain = try NIOSSLCertificate.fromPEMFile(certificateFile).map { .certificate($0) }
                configuration.privateKey = .privateKey(try NIOSSLPrivateKey(file: keyFile, format: .pem))
            }
        } catch {
            throw .invalidArgument("cannot read etcd's TLS files: \(error)")
        }
        return configuration
    }
}
