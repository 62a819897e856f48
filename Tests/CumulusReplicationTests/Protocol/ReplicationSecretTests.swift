import CumulusModel
import CumulusReplication
import CumulusStorage
import CumulusTestSupport
import Foundation
import Testing

@Suite("Replication secret")
struct ReplicationSecretTests {
    func file(_ text: String, mode: UInt16 = 0o600) throws -> String {
        let path = TemporaryDirectory("secret").path
        #expect(FileManager.default.createFile(atPath: path, contents: Data(text.utf8)))
        try FilePermissions.set(mode, on: path)
        return path
    }

    @Test("from a private file (one trailing line break dropped), from the environment, or from the argument with a warning")
    func sources() throws {
        let private_ = try file("s3cret\n")
        defer { try? FileManager.default.removeItem(atPath: private_) }
        let fromFile = try #require(try ReplicationSecret.resolve(argument: nil, file: private_, environment: [:]))
        #expect(fromFile.secret == "s3cret")
        #expect(fromFile.warnings.isEmpty)

        let crlf = try file("two words \r\n")
        defer { try? FileManager.default.removeItem(atPath: crlf) }
        #expect(try ReplicationSecret.resolve(argument: nil, file: crlf, environment: [:])?.secret == "two words ")

        let environment = [ReplicationSecret.environmentVariable: "from-env"]
        let fromEnvironment = try #require(try ReplicationSecret.resolve(argument: nil, file: nil, environment: environment))
        #expect(fromEnvironment.secret == "from-env")
        #expect(fromEnvironment.warnings.isEmpty)
        #expect(try ReplicationSecret.resolve(argument: nil, file: private_, environment: environment)?.secret == "s3cret",
            "an option wins over the environment")

        let fromArgument = try #require(try ReplicationSecret.resolve(argument: "argv", file: nil, environment: environment))
        #expect(fromArgument.secret == "argv")
        #expect(fromArgument.warnings.count == 1)
        #expect(fromArgument.warnings.first?.contains("ps") == true)

        #expect(try ReplicationSecret.resolve(argument: nil, file: nil, environment: [:]) == nil)
    }

    @Test("a file others can read is used with a warning naming chmod")
    func looseFileWarns() throws {
        let loose = try file("s3cret", mode: 0o644)
        defer { try? FileManager.default.removeItem(atPath: loose) }
        let resolved = try #require(try ReplicationSecret.resolve(argument: nil, file: loose, environment: [:]))
        #expect(resolved.secret == "s3cret")
        #expect(resolved.warnings.count == 1)
        #expect(resolved.warnings.first?.contains("chmod 600 \(loose)") == true)
    }

    @Test("both options, an unreadable file and an empty secret are invalidArguments")
    func badSources() throws {
        let empty = try file("\n")
        defer { try? FileManager.default.removeItem(atPath: empty) }
        for (argument, path, environment) in [
            ("a", empty, [String: String]()), (nil, "/nonexistent/secret", [:]), (nil, empty, [:]),
            ("", nil, [:]), (nil, nil, [ReplicationSecret.environmentVariable: ""]),
        ] as [(String?, String?, [String: String])] {
            #expect(throws: CumulusError.self) { try ReplicationSecret.resolve(argument: argument, file: path, environment: environment) }
        }
    }
}
