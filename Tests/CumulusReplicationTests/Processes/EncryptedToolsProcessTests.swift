import CumulusEngine
import CumulusModel
import Foundation
import Testing

/// The operator tools never print a value of the encrypted key space (issue
/// 17; `Docs/DATA-MODEL.md`, "Encrypted values"): `cumulus log events`, `audit export`, `show` and `history` run as processes on a
/// data directory holding one, and show a marker where a plain value would be.
@Suite struct EncryptedToolsProcessTests {
    static let secret = "s3cr3t-diary-entry-plaintext"

    @Test func theToolsMarkEncryptedValuesAndNeverPrintThem() async throws {
        let path = ReplicationWorld.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let user = ReplicationWorld.user
        let zone = ZoneID(zoneName: "Lists", ownerName: user)
        do {
            let container = try Container(path: path)
            let db = ReplicationWorld.database(container)
            _ = try await db.saveZones([zone], as: user)
            var diary = Record(recordType: "Diary", recordID: RecordID(recordName: "diary", zoneID: zone))
            diary["title"] = .string("Monday")
            diary[encrypted: "entry"] = .string(Self.secret)
            diary[encrypted: "raw"] = .bytes(Array(Self.secret.utf8))
            _ = try await db.modify(saving: [diary], savePolicy: .allKeys, as: user)
            diary[encrypted: "entry"] = .string(Self.secret + "-changed")
            _ = try await db.modify(saving: [diary], savePolicy: .allKeys, as: user)
            container.close()
        }
        let scope = [
            "--data", path, "--database", "\(ReplicationWorld.containerID)/development/private/\(user)", "--zone",
            "Lists:\(user)",
        ]
        let runs: [[String]] = [
            ["log", "events", "--data", path],
            ["audit", "export", "--data", path],
            ["audit", "export", "--data", path, "--format", "csv"],
            ["show"] + scope + ["diary"],
            ["history"] + scope + ["diary"],
        ]
        let base64 = Data(Self.secret.utf8).base64EncodedString()
        for arguments in runs {
            let run = NodeProcess(arguments, port: 0, logDirectory: path + "-logs")
            defer { try? FileManager.default.removeItem(atPath: path + "-logs") }
            try run.start()
            let status = await run.waitForExit(timeout: .seconds(60))
            #expect(status == 0, "\(arguments): \(run.stderr)")
            let printed = run.stdout + run.stderr
            #expect(!printed.contains("s3cr3t") && !printed.contains(base64), "\(arguments) printed an encrypted value:\n\(printed)")
            #expect(printed.contains("Diary") || printed.contains("diary"), "\(arguments) printed nothing of the record:\n\(printed)")
            if arguments[0] == "show" || arguments[0] == "history" {
                #expect(printed.contains("entry") && printed.contains("encrypted"), "\(arguments) shows no marker:\n\(printed)")
            }
        }
    }
}
