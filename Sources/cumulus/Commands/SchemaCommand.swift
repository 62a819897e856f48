import ArgumentParser
import CumulusEngine
import CumulusModel
import Foundation

/// `cumulus schema export|import|validate|deploy|reset`, in the manner of Apple's
/// `cktool`: CloudKit's text schema for one container environment (`Docs/SCHEMA.md`).
struct SchemaCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schema",
        abstract: "Export, import, validate, deploy and reset CloudKit schemas.",
        subcommands: [Export.self, Import.self, Validate.self, Deploy.self, Reset.self])

    /// Which container environment.
    struct Target: ParsableArguments {
        @Option(help: "The container, e.g. iCloud.com.example.notes.") var container: String
        @Option(help: "development or production.") var environment: String = "development"

        func schemaID() throws -> SchemaID {
            guard let environment = DatabaseID.Environment(name: environment) else {
                throw ValidationError("--environment is development or production, not \(environment)")
            }
            return SchemaID(container: container, environment: environment)
        }
    }

    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print a container environment's schema.")
        @OptionGroup var options: LogCommand.DataOptions
        @OptionGroup var target: Target
        @Option(help: "Write the schema to this file instead of standard output.") var out: String?

        func run() async throws {
            let id = try target.schemaID()
            try await oneLineErrors("schema export") {
                let text = try withContainer(options.data) { try $0.exportSchema(id) }
                if let out {
                    try Data(text.utf8).write(to: URL(fileURLWithPath: out), options: .atomic)
                } else {
                    print(text, terminator: "")
                }
            }
        }
    }

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Replace a container environment's schema with a file's (additive to production only).")
        @OptionGroup var options: LogCommand.DataOptions
        @OptionGroup var target: Target
        @Argument(help: "The schema file.") var file: String

        func run() async throws {
            let id = try target.schemaID()
            try await oneLineErrors("schema import") {
                let text = try readSchemaFile(file)
                let schema = try await withContainer(options.data) {
                    try await $0.importSchema(text, into: id, as: operatorName, requestID: commandRequestID("schema import"))
                }
                print("imported \(schema.recordTypes.count) record types and \(schema.roles.count) roles into \(id)")
            }
        }
    }

    struct Validate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Check a schema file's syntax and rules without importing it.")
        @Argument(help: "The schema file.") var file: String

        func run() async throws {
            try await oneLineErrors("schema validate") {
                let schema = try SchemaParser.parse(try readSchemaFile(file))
                print("valid: \(schema.recordTypes.count) record types, \(schema.roles.count) roles")
            }
        }
    }

    struct Deploy: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Copy the development schema to production; refused if it is not additive.")
        @OptionGroup var options: LogCommand.DataOptions
        @Option(help: "The container.") var container: String

        func run() async throws {
            try await oneLineErrors("schema deploy") {
                let schema = try await withContainer(options.data) {
                    try await $0.deploySchema(container: container, as: operatorName, requestID: commandRequestID("schema deploy"))
                }
                print("deployed \(schema.recordTypes.count) record types to \(container)/production")
            }
        }
    }

    struct Reset: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Set the development schema back to production's (records are kept).")
        @OptionGroup var options: LogCommand.DataOptions
        @Option(help: "The container.") var container: String

        func run() async throws {
            try await oneLineErrors("schema reset") {
                let schema = try await withContainer(options.data) {
                    try await $0.resetSchema(container: container, as: operatorName, requestID: commandRequestID("schema reset"))
                }
                print("reset \(container)/development to production's \(schema.recordTypes.count) record types")
            }
        }
    }
}

/// `cumulus roles assign|list`: custom security roles of users.
struct RolesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "roles", abstract: "Give users the custom security roles a schema creates.",
        subcommands: [Assign.self, List.self])

    struct Assign: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Set a user's custom roles (replacing the ones it had; none removes them all).")
        @OptionGroup var options: LogCommand.DataOptions
        @OptionGroup var target: SchemaCommand.Target
        @Option(help: "The user record name.") var user: String
        @Argument(help: "The roles (as created with CREATE ROLE).") var roles: [String] = []

        func run() async throws {
            let id = try target.schemaID()
            try await oneLineErrors("roles assign") {
                try await withContainer(options.data) {
                    try await $0.assignRoles(roles, to: user, in: id, as: operatorName, requestID: commandRequestID("roles"))
                }
                print(roles.isEmpty ? "\(user) holds no custom roles in \(id)" : "\(user) holds \(roles.joined(separator: ", ")) in \(id)")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List users with custom roles.")
        @OptionGroup var options: LogCommand.DataOptions
        @OptionGroup var target: SchemaCommand.Target

        func run() async throws {
            let id = try target.schemaID()
            try await oneLineErrors("roles list") {
                for (user, roles) in try withContainer(options.data, { try $0.roleAssignments(in: id) }) {
                    print("\(user)\t\(roles.joined(separator: ","))")
                }
            }
        }
    }
}

/// The actor schema and role commits carry: the operator, not a CloudKit user.
private let operatorName = "_cumulus_operator"

/// The request ID of a command's commit: the command and a fresh ID for this run, so
/// the log tells an operator's change from a client's request.
private func commandRequestID(_ command: String) -> String {
    "cumulus \(command)/" + UUID.random().uuidString
}

private func readSchemaFile(_ path: String) throws -> String {
    guard let data = FileManager.default.contents(atPath: path) else {
        throw CumulusError(.invalidArguments, "cannot read \(path)")
    }
    guard let text = String(data: data, encoding: .utf8) else {
        throw CumulusError(.invalidArguments, "\(path) is not UTF-8 text")
    }
    return text
}

private func withContainer<T>(_ path: String, _ body: (Container) throws -> T) throws -> T {
    let container = try openContainer(path)
    defer { container.close() }
    return try body(container)
}

private func withContainer<T>(_ path: String, _ body: (Container) async throws -> T) async throws -> T {
    let container = try openContainer(path)
    defer { container.close() }
    return try await body(container)
}

/// Runs `body`; any error becomes one line on standard error and exit status 1.
private func oneLineErrors(_ command: String, _ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let error as ValidationError {
        throw error
    } catch let error as CumulusError {
        FileHandle.standardError.write(Data("cumulus \(command): \(error.message)\n".utf8))
        throw ExitCode(1)
    } catch {
        FileHandle.standardError.write(Data("cumulus \(command): \(error)\n".utf8))
        throw ExitCode(1)
    }
}
