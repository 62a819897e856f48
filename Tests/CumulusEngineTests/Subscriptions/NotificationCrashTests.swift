import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// "The notifier never delivers a change that a crash then loses": a child process
/// (`cumulus-crash --notify-child`) writes matching records from several tasks and
/// prints each acknowledged one; the test SIGKILLs it mid-flight, reopens the
/// directory and checks that notifications and the log agree exactly.
@Suite("Subscriptions: crash durability")
struct NotificationCrashTests {
    /// The built `cumulus-crash` (`swift build` puts it beside this test binary, in
    /// `.build/debug`), whose `--notify-child` mode is the writer this test kills.
    static var harness: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL.deletingLastPathComponent()
            .appendingPathComponent("cumulus-crash")
    }

    @Test("after SIGKILL: every acknowledged write was notified, and no notification outlived its commit")
    func killedWriter() async throws {
        for round in 0..<3 {
            let temporary = TemporaryDirectory("notify-crash-\(round)")
            defer { temporary.remove() }
            try temporary.create()
            let (path, output) = (temporary.appending("data"), temporary.appending("out"))
            _ = FileManager.default.createFile(atPath: output, contents: nil)
            let process = try SpawnedProcess.start(
                Self.harness.path,
                ["--notify-child", "--dir", path, "--container", EngineWorld.containerID, "--user", EngineWorld.user],
                output: .append(output), errors: .discard)
            // Let it acknowledge some writes, then kill it at a random moment.
            let deadline = ContinuousClock.now + .seconds(60)
            while acknowledged(output).count < 20 * (round + 1), process.isRunning, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(5))
            }
            try await Task.sleep(for: .milliseconds(Int.random(in: 0...50)))
            process.send(SIGKILL)
            process.waitForExit()
            let acked = acknowledged(output)
            #expect(acked.count >= 20, "the child acknowledged too little before the kill")

            let container = try Container(path: path)
            defer { container.close() }
            let head = container.store.head.sequence
            var notifications: [SubscriptionNotification] = []
            var token: NotificationToken?
            while true {
                let page = try container.notifications(for: EngineWorld.user, since: token, limit: 1_000)
                notifications += page.notifications
                token = page.token
                if !page.moreComing { break }
            }
            let queryNotified = Set(notifications.filter { $0.subscriptionID == "todos" }.compactMap(\.recordID?.recordName))
            // Nothing acknowledged was lost…
            #expect(acked.isSubset(of: queryNotified), "round \(round): acknowledged writes without a notification")
            // …and nothing notified is missing from the log: each notification's commit
            // exists and holds the record it names.
            #expect(notifications.allSatisfy { $0.commitSequence <= head })
            var saved = Set<String>()
            try container.store.commits(from: 1) { commit in
                for case .recordSaved(_, let record, _) in commit.events where record.recordType == "Todo" {
                    saved.insert(record.recordID.recordName)
                }
                return true
            }
            #expect(queryNotified == saved, "round \(round): notifications and the log disagree")
            #expect(notifications.map(\.sequence) == Array(1...UInt64(notifications.count)))
            // The notification views equal a rebuild from the surviving log.
            let report = try container.verify()
            #expect(report.isHealthy, "\(report.lines)")
        }
    }

    private func acknowledged(_ output: String) -> Set<String> {
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        // A line cut by the kill has no newline yet: only complete lines count.
        let complete = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        return Set(complete.compactMap { $0.hasPrefix("ack ") ? String($0.dropFirst(4)) : nil })
    }
}
