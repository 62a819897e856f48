import ArgumentParser
import CumulusEngine
import CumulusLog
import CumulusServer
import Foundation
import Logging

/// `cumulus serve`: the CloudKit Web Services–compatible HTTP API.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve", abstract: "Serve the CloudKit Web Services–compatible HTTP API.")

    @Option(help: "The data directory (created if missing).") var data = "./cumulus-data"
    @Option(help: "The address to listen on.") var host = "127.0.0.1"
    @Option(help: "The port to listen on.") var port = 8765
    @Option(help: "The container the development credentials open.") var container = "iCloud.com.example.cumulus"
    @Flag(help: "Mint and print a development API token and user token at start.") var dev = false

    func run() async throws {
        var logger = Logger(label: "cumulus")
        logger.logLevel = .info
        let metrics = ServerMetrics()
        var writerOptions = LogWriter.Options()
        writerOptions.observer = { metrics.recordGroup($0) }
        let store = try Container(path: data, writerOptions: writerOptions)
        let auth = try AuthStore(environment: store.store.environment)
        if dev {
            let users = try auth.users()
            let user = try users.first ?? auth.addUser()
            let apiToken = try auth.createAPIToken(container: container)
            let webToken = try auth.createWebAuthToken(for: user)
            let base = "http://\(host):\(port)/database/1/\(container)/development"
            // Written unbuffered so the banner shows even when stdout is a pipe or a file.
            FileHandle.standardOutput.write(Data("""
                Cumulus is serving \(data) on http://\(host):\(port)
                  container:      \(container)
                  user:           \(user)
                  ckAPIToken:     \(apiToken)
                  ckWebAuthToken: \(webToken)
                  try:            curl '\(base)/private/zones/list?ckAPIToken=\(apiToken)&ckWebAuthToken=\(webToken)'

                """.utf8))
        } else {
            FileHandle.standardOutput.write(Data("Cumulus is serving \(data) on http://\(host):\(port)\n".utf8))
        }
        let api = CloudKitAPI(container: store, auth: auth, metrics: metrics, logger: logger)
        let app = CumulusHTTPServer.application(api: api, host: host, port: port, logger: logger)
        try await app.runService()
        // SIGINT/SIGTERM: the HTTP server has drained; finish queued commits, then close.
        store.close()
        print("Cumulus stopped cleanly")
    }
}

/// `cumulus users add|list`.
struct UsersCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "users", abstract: "Manage users and their web auth tokens.", subcommands: [Add.self, List.self])

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Add a user and print a web auth token for it.")
        @OptionGroup var options: LogCommand.DataOptions
        @Option(help: "The user record name (default: a new _<32 hex>).") var name: String?

        func run() throws {
            let auth = try openAuth(options.data)
            let user = try auth.addUser(name: name)
            print("user:           \(user)")
            print("ckWebAuthToken: \(try auth.createWebAuthToken(for: user))")
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List users.")
        @OptionGroup var options: LogCommand.DataOptions
        func run() throws { for user in try openAuth(options.data).users() { print(user) } }
    }
}

/// `cumulus tokens create|revoke`.
struct TokensCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tokens", abstract: "Mint and revoke API and web auth tokens.", subcommands: [Create.self, Revoke.self])

    struct Create: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Mint an API token for a container, or a web auth token for a user.")
        @OptionGroup var options: LogCommand.DataOptions
        @Option(help: "Mint an API token for this container.") var container: String?
        @Option(help: "Mint a web auth token for this user.") var user: String?

        func run() throws {
            let auth = try openAuth(options.data)
            if let container { print("ckAPIToken: \(try auth.createAPIToken(container: container))") }
            if let user { print("ckWebAuthToken: \(try auth.createWebAuthToken(for: user))") }
            if container == nil && user == nil { throw ValidationError("give --container or --user") }
        }
    }

    struct Revoke: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke an API or web auth token.")
        @OptionGroup var options: LogCommand.DataOptions
        @Argument(help: "The token.") var token: String

        func run() throws {
            let auth = try openAuth(options.data)
            let revoked = try auth.revokeAPIToken(token) || auth.revokeWebAuthToken(token)
            print(revoked ? "revoked" : "no such token")
            if !revoked { throw ExitCode(1) }
        }
    }
}

/// Opens the auth table of a data directory (creating the directory if needed).
func openAuth(_ path: String) throws -> AuthStore {
    let container = try Container(path: path)
    return try AuthStore(environment: container.store.environment)
}

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
