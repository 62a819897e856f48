import CumulusEngine
import CumulusModel
import CumulusTestSupport
import Foundation
import Testing

/// `cumulus schema …` and `cumulus roles …` as an operator runs them: exit 0 on
/// success, one line and exit 1 otherwise (issue #13).
@Suite("cumulus schema / roles commands")
struct SchemaCommandTests {
    static let container = ContainerWorld.containerID

    @Test("export, validate, import, deploy, a refused deploy, reset and roles, each with its exit status")
    func schemaCommands() async throws {
        guard CumulusExecutable.isBuilt() else { return }
        // The data directory and the schema files side by side, all removed at the end.
        let temporary = TemporaryDirectory("schema-cli")
        defer { temporary.remove() }
        let (path, file) = (temporary.appending("data"), temporary.appending("schema"))
        do {
            let container = try Container(path: path)
            let db = container.privateDatabase(container: Self.container, user: ContainerWorld.user)
            _ = try await db.modify(saving: [Record.make("Note", "n1", in: .default, ["title": .string("x")])], as: ContainerWorld.user)
            container.close()
        }
        let data = ["--data", path]
        let target = ["--container", Self.container]

        var result = try CumulusExecutable.run(["schema", "export"] + target + data)
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.hasPrefix("DEFINE SCHEMA\n"))
        #expect(result.output.contains("title STRING QUERYABLE SORTABLE SEARCHABLE"))

        let schema = """
            DEFINE SCHEMA
                CREATE ROLE Editor;
                RECORD TYPE Note ( "___recordID" REFERENCE QUERYABLE, title STRING QUERYABLE, GRANT WRITE TO Editor );
            """
        try Data(schema.utf8).write(to: URL(fileURLWithPath: file))
        result = try CumulusExecutable.run(["schema", "validate", file])
        #expect(result.status == 0, "\(result.output)")

        try Data("DEFINE SCHEMA RECORD TYPE Note ( title STRNG );".utf8).write(to: URL(fileURLWithPath: file + ".bad"))
        result = try CumulusExecutable.run(["schema", "validate", file + ".bad"])
        #expect(result.status == 1)
        #expect(result.output.split(separator: "\n").count == 1, "one line: \(result.output)")
        #expect(result.output.contains("line 1, column"), "\(result.output)")

        result = try CumulusExecutable.run(["schema", "import"] + target + data + [file])
        #expect(result.status == 0, "\(result.output)")
        result = try CumulusExecutable.run(["schema", "deploy"] + target + data)
        #expect(result.status == 0, "\(result.output)")
        result = try CumulusExecutable.run(["schema", "export"] + target + ["--environment", "production"] + data + ["--out", file + ".out"])
        #expect(result.status == 0, "\(result.output)")
        let exported = try String(contentsOfFile: file + ".out", encoding: .utf8)
        #expect(exported == SchemaPrinter.print(try SchemaParser.parse(schema)))

        // Removing a deployed field: refused in one line, exit 1.
        try Data("DEFINE SCHEMA RECORD TYPE Note ( \"___recordID\" REFERENCE QUERYABLE );".utf8)
            .write(to: URL(fileURLWithPath: file))
        result = try CumulusExecutable.run(["schema", "import"] + target + data + [file])
        #expect(result.status == 1)
        #expect(result.output == "cumulus schema import: field 'Note.title' would be removed; a deploy may only add\n"
            || result.output.contains("field 'Note.title' would be removed"), "\(result.output)")
        #expect(result.output.split(separator: "\n").count == 1)

        result = try CumulusExecutable.run(["schema", "reset"] + target + data)
        #expect(result.status == 0, "\(result.output)")

        result = try CumulusExecutable.run(["roles", "assign"] + target + ["--user", "_carol"] + data + ["Editor"])
        #expect(result.status == 0, "\(result.output)")
        result = try CumulusExecutable.run(["roles", "list"] + target + data)
        #expect(result.output == "_carol\tEditor\n", "\(result.output)")
        result = try CumulusExecutable.run(["roles", "assign"] + target + ["--user", "_carol"] + data + ["Nobody"])
        #expect(result.status == 1)
        #expect(result.output.split(separator: "\n").count == 1)

        result = try CumulusExecutable.run(["schema", "export", "--container", Self.container, "--environment", "staging"] + data)
        #expect(result.status != 0)
    }
}
