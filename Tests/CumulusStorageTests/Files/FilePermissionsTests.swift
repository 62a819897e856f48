import CumulusTestSupport
import Foundation
import Testing

@testable import CumulusStorage

@Suite("File permissions")
struct FilePermissionsTests {
    func mode(_ path: String) throws -> Int {
        try #require(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
    }

    @Test("a new environment's directories are 0700 and its files 0600, and so is a copy of it")
    func newEnvironmentIsPrivate() throws {
        try TemporaryDirectory.with("storage") { root in
            let path = root + "/nested/data"
            let environment = try LMDBEnvironment(path: path)
            let table = try environment.table("t")
            try environment.write { try $0.put(table, key: [1], value: [2]) }
            #expect(try mode(root) == 0o700, "a missing parent is created private too")
            #expect(try mode(path) == 0o700)
            #expect(try mode(path + "/data.mdb") == 0o600)
            #expect(try mode(path + "/lock.mdb") == 0o600)
            #expect(FilePermissions.looserThanPrivate(dataDirectory: path).isEmpty)
            try environment.copy(to: root + "/copy", compact: true)
            #expect(try mode(root + "/copy") == 0o700)
            #expect(try mode(root + "/copy/data.mdb") == 0o600)
        }
    }

    @Test("a data directory readable by others is named, with the command that tightens it")
    func looseDirectoryIsReported() throws {
        try TemporaryDirectory.with("storage") { path in
            _ = try LMDBEnvironment(path: path)
            try FilePermissions.set(0o755, on: path)
            try FilePermissions.set(0o644, on: path + "/data.mdb")
            let findings = FilePermissions.looserThanPrivate(dataDirectory: path)
            #expect(findings.count == 2)
            #expect(findings.contains { $0.contains("mode 755") && $0.contains("chmod 700 \(path)") })
            #expect(findings.contains { $0.contains("mode 644") && $0.contains("chmod 600 \(path)/data.mdb") })
            #expect(FilePermissions.looserThanPrivate(file: path + "/data.mdb").count == 1)
            #expect(FilePermissions.looserThanPrivate(file: path + "/missing").isEmpty)
            #expect(throws: StorageError.self) { try FilePermissions.set(0o600, on: path + "/missing") }
        }
    }
}
