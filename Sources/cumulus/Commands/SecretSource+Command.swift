import ArgumentParser
import CumulusStorage
import Foundation

extension SecretSource {
    /// The secret for a command, or `nil` if none is given; the warnings go to standard
    /// error when `warn` is set (once per run: `validate()` resolves quietly). A bad
    /// source is a `ValidationError`, which prints the usage.
    func resolveForCommand(argument: String? = nil, file: String?, warn: Bool) throws -> String? {
        do {
            guard let (secret, warnings) = try resolve(argument: argument, file: file, environment: ProcessInfo.processInfo.environment)
            else { return nil }
            if warn { for warning in warnings { FileHandle.standardError.write(Data("cumulus: warning: \(warning)\n".utf8)) } }
            return secret
        } catch {
            throw ValidationError("\(error)")
        }
    }
}
