import ArgumentParser
import CumulusEngine
import CumulusModel
import CumulusServer
import Foundation

/// `cumulus users add|list`.
struct UsersCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "users", abstract: "Manage users, their passwords and their web auth tokens.",
        subcommands: [Add.self, List.self, Passwd.self, SignInCode.self])

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Add a user and print a web auth token for it.")
        @OptionGroup var options: LogCommand.DataOptions
        @Option(help: "The user record name (default: a new _<32 hex>).") var name: String?
        @Option(help: "The container the web auth token signs in to (a token opens one).")
        var container = ServeCommand.developmentContainer
        @Flag(
            name: .customLong("operator"),
            help: "Make the user an operator: signed in to the console (/console), it also sees the operator pages (the node, its cluster).")
        var isOperator = false

        func run() throws {
            let auth = try openAuth(options.data)
            let user = try auth.addUser(name: name, operator: isOperator)
            print("user:           \(user)\(isOperator ? "  (operator)" : "")")
            print("ckWebAuthToken: \(try auth.createWebAuthToken(for: user, container: container))")
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List users.")
        @OptionGroup var options: LogCommand.DataOptions
        func run() throws {
            let auth = try openAuth(options.data)
            for user in try auth.users() { print(try auth.isOperator(user) ? "\(user)  (operator)" : user) }
        }
    }

    struct Passwd: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Set the password a user signs in with on the sign-in page (read from a file or standard input, never the command line).")
        @OptionGroup var options: LogCommand.DataOptions
        @Option(help: "The user record name.") var user: String
        @Option(help: "A file whose first line is the password (default: standard input).") var passwordFile: String?
        @Flag(help: "Remove the user's password instead: they can then sign in only with a sign-in code.") var remove = false

        func run() throws {
            let auth = try openAuth(options.data)
            if remove {
                print(try auth.removePassword(for: user) ? "password removed" : "\(user) had no password")
                return
            }
            let text: String
            if let passwordFile {
                text = try String(contentsOfFile: passwordFile, encoding: .utf8)
            } else {
                text = readLine(strippingNewline: true) ?? ""
            }
            let password = text.split(separator: "\n", omittingEmptySubsequences: false).first.map(String.init) ?? ""
            guard password.count >= 8 else { throw ValidationError("a password is at least 8 characters") }
            try auth.setPassword(password, for: user)
            print("password set for \(user)")
        }
    }

    struct SignInCode: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "signin-code",
            abstract: "Mint a one-time code that signs a user in on the sign-in page, within 15 minutes.")
        @OptionGroup var options: LogCommand.DataOptions
        @Option(help: "The user record name.") var user: String
        @Option(help: "The container the code signs in to.") var container = ServeCommand.developmentContainer

        func run() throws {
            let code = try openAuth(options.data).createSignInLink(for: user, container: container)
            print("sign-in code: \(code)  (once, within 15 minutes, for \(user) in \(container))")
        }
    }
}
