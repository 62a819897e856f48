import ArgumentParser
import CumulusEngine
import CumulusModel
import CumulusServer
import Foundation

/// `cumulus tokens create|revoke`.
struct TokensCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tokens", abstract: "Mint and revoke API and web auth tokens.", subcommands: [Create.self, Revoke.self])

    struct Create: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Mint an API token for a container, or a web auth token for a user.")
        @OptionGroup var options: LogCommand.DataOptions
        @Option(help: "Mint an API token for this container; with --user, the container the web auth token signs in to.")
        var container: String?
        @Option(help: "The environment the API token opens: development or production (a token opens one).")
        var environment = "development"
        @Option(help: "Mint a web auth token for this user.") var user: String?
        @Option(
            name: .customLong("origin"),
            help: "A web origin (https://app.example.com) whose pages may use the API token from a browser (CORS); repeat for more. None: no page of another origin may.")
        var origins: [String] = []

        func run() throws {
            let auth = try openAuth(options.data)
            guard let environment = DatabaseID.Environment(name: environment) else {
                throw ValidationError("--environment is development or production")
            }
            if user != nil && !origins.isEmpty {
                throw ValidationError("--origin belongs to an API token (--container without --user)")
            }
            if let user {
                // A web auth token belongs to one container: --user alone mints one for the
                // development container, as `users add` does.
                let container = container ?? ServeCommand.developmentContainer
                print("ckWebAuthToken: \(try auth.createWebAuthToken(for: user, container: container))")
            } else if let container {
                print("ckAPIToken: \(try auth.createAPIToken(container: container, environment: environment, origins: origins))")
            } else {
                throw ValidationError("give --container (an API token) or --user [--container] (a web auth token)")
            }
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
