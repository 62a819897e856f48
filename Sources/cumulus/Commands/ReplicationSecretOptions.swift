import ArgumentParser
import CumulusModel
import CumulusReplication
import Foundation

/// The options that name the replication secret, shared by `serve` and `status`
/// (``ReplicationSecret`` says where it may come from and why not the command line).
struct ReplicationSecretOptions: ParsableArguments {
    @Option(
        help: """
            A file holding the secret leader and followers share (keep it mode 0600). Or set \
            \(ReplicationSecret.environmentVariable).
            """)
    var replicationSecretFile: String?

    @Option(help: "The secret itself: visible to every local user in ps, so prefer --replication-secret-file.")
    var replicationSecret: String?

    /// The secret, or `nil` if none is given; the warnings go to standard error when
    /// `warn` is set. A bad source is a `ValidationError`.
    func resolve(warn: Bool) throws -> String? {
        do {
            guard
                let (secret, warnings) = try ReplicationSecret.resolve(
                    argument: replicationSecret, file: replicationSecretFile,
                    environment: ProcessInfo.processInfo.environment)
            else { return nil }
            if warn { for warning in warnings { FileHandle.standardError.write(Data("cumulus: warning: \(warning)\n".utf8)) } }
            return secret
        } catch let error as CumulusError {
            throw ValidationError(error.message)
        }
    }
}
