import ArgumentParser
import CumulusEngine
import CumulusModel
import CumulusServer
import Foundation

/// `cumulus keys add`: register a server-to-server public key.
struct KeysCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys", abstract: "Manage server-to-server keys (ECDSA P-256).", subcommands: [Add.self])

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register a P-256 public key (PEM) for a container; print its key ID.")
        @OptionGroup var options: LogCommand.DataOptions
        @Option(help: "The container the key opens (its public database).") var container: String
        @Option(help: "A file holding the public key in PEM form.") var publicKey: String

        func run() throws {
            let pem = try String(contentsOfFile: publicKey, encoding: .utf8)
            let (keyID, user) = try openAuth(options.data).addServerKey(container: container, publicKeyPEM: pem)
            print("X-Apple-CloudKit-Request-KeyID: \(keyID)")
            print("acts as user:                   \(user)")
        }
    }
}
