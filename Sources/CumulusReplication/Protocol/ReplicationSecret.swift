import CumulusModel
import CumulusStorage
import Foundation

/// Where a node finds the replication secret, which unlocks `/replication/snapshot`
/// (every record, the server secret, the credential hashes): a file or the environment,
/// so it never has to appear in a process's arguments, which every local user can read
/// (`ps`, `/proc/PID/cmdline`).
public enum ReplicationSecret {
    /// The environment variable read when no option names the secret.
    public static let environmentVariable = "CUMULUS_REPLICATION_SECRET"

    /// The secret, and warnings for the operator, from the first of: `argument`
    /// (`--replication-secret`, kept for old scripts, with a warning), the file at
    /// `file` (`--replication-secret-file`; one trailing line break dropped), or
    /// ``environmentVariable`` in `environment`. `nil` when none is given. Throws
    /// `invalidArguments` for both options at once, an unreadable file, or an empty
    /// secret.
    public static func resolve(argument: String?, file: String?, environment: [String: String]) throws -> (
        secret: String, warnings: [String]
    )? {
        if argument != nil && file != nil {
            throw CumulusError(.invalidArguments, "give --replication-secret-file or --replication-secret, not both")
        }
        var warnings: [String] = []
        let secret: String
        let source: String
        if let argument {
            secret = argument
            source = "--replication-secret"
            warnings.append(
                "--replication-secret is visible to every local user (ps); use --replication-secret-file or "
                    + "\(environmentVariable)")
        } else if let file {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw CumulusError(.invalidArguments, "cannot read the replication secret file \(file)")
            }
            // The line break an editor or `echo` leaves is not part of the secret.
            var bytes = [UInt8](data)
            if bytes.last == UInt8(ascii: "\n") {
                bytes.removeLast()
                if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
            }
            secret = String(decoding: bytes, as: UTF8.self)
            source = file
            warnings += FilePermissions.looserThanPrivate(file: file)
        } else if let value = environment[environmentVariable] {
            secret = value
            source = environmentVariable
        } else {
            return nil
        }
        guard !secret.isEmpty else { throw CumulusError(.invalidArguments, "the replication secret in \(source) is empty") }
        return (secret, warnings)
    }
}
