import Foundation

/// Where a server finds one secret: a file or an environment variable, so it never has
/// to appear in a process's arguments, which every local user can read (`ps`,
/// `/proc/PID/cmdline`). The replication secret and the metrics token are found this way.
public struct SecretSource: Sendable {
    /// What the secret is, for messages ("the replication secret").
    public var name: String
    /// The option naming a file that holds it (`--replication-secret-file`).
    public var fileOption: String
    /// An option taking the secret itself, kept for old scripts, used with a warning.
    public var argumentOption: String?
    /// The environment variable read when no option is given.
    public var environmentVariable: String

    /// A source of the secret called `name`.
    public init(name: String, fileOption: String, argumentOption: String? = nil, environmentVariable: String) {
        self.name = name
        self.fileOption = fileOption
        self.argumentOption = argumentOption
        self.environmentVariable = environmentVariable
    }

    /// The secret and warnings for the operator, from the first of: `argument` (with a
    /// warning), the file at `file` (one trailing line break dropped; a warning when
    /// others may read it), or ``environmentVariable`` in `environment`. `nil` when none
    /// is given. Both options at once, an unreadable file, or an empty secret are
    /// `invalidArgument`.
    public func resolve(argument: String?, file: String?, environment: [String: String]) throws(StorageError) -> (
        secret: String, warnings: [String]
    )? {
        let argumentName = argumentOption ?? "the secret argument"
        if argument != nil && file != nil {
            throw .invalidArgument("give \(fileOption) or \(argumentName), not both")
        }
        var warnings: [String] = []
        let secret: String
        let origin: String
        if let argument {
            secret = argument
            origin = argumentName
            warnings.append(
                "\(argumentName) is visible to every local user (ps); use \(fileOption) or \(environmentVariable)")
        } else if let file {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw .invalidArgument("cannot read \(name) from \(file)")
            }
            // The line break an editor or `echo` leaves is not part of the secret.
            var bytes = [UInt8](data)
            if bytes.last == UInt8(ascii: "\n") {
                bytes.removeLast()
                if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
            }
            secret = String(decoding: bytes, as: UTF8.self)
            origin = file
            warnings += FilePermissions.looserThanPrivate(file: file)
        } else if let value = environment[environmentVariable] {
            secret = value
            origin = environmentVariable
        } else {
            return nil
        }
        guard !secret.isEmpty else { throw .invalidArgument("\(name) in \(origin) is empty") }
        return (secret, warnings)
    }
}
