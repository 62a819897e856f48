import CumulusModel
import CumulusStorage

/// Where a node finds the replication secret, which unlocks `/replication/snapshot`
/// (every record, the server secret, the credential hashes): a file or the
/// environment, never only the command line (``SecretSource``).
public enum ReplicationSecret {
    /// The environment variable read when no option names the secret.
    public static let environmentVariable = "CUMULUS_REPLICATION_SECRET"

    /// The options and variable it is read from.
    public static let source = SecretSource(
        name: "the replication secret", fileOption: "--replication-secret-file", argumentOption: "--replication-secret",
        environmentVariable: environmentVariable)

    /// ``SecretSource/resolve(argument:file:environment:)`` for the replication secret;
    /// a bad source is `invalidArguments`.
    public static func resolve(argument: String?, file: String?, environment: [String: String]) throws -> (
        secret: String, warnings: [String]
    )? {
        do {
            return try source.resolve(argument: argument, file: file, environment: environment)
        } catch {
            throw CumulusError(.invalidArguments, "\(error)")
        }
    }
}
