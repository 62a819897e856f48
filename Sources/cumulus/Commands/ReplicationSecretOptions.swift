import ArgumentParser
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
        try ReplicationSecret.source.resolveForCommand(argument: replicationSecret, file: replicationSecretFile, warn: warn)
    }
}
