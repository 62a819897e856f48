// cumulus-crash: kills a writing process at random moments and checks that the log
// kept every acknowledged commit, verifies, and shows nothing half-written.
//
//   cumulus-crash --kills 20 --dir .build/crash-test      (parent: the test)
//   cumulus-crash --child --dir DIR --seed N              (child: the victim)
//   cumulus-crash --notify-child --dir DIR --container C --user U
//                                                         (the engine's notification crash test's victim)
//
// The child appends sample commits from 16 concurrent tasks through the group-commit
// writer (durable: fsync before acknowledging), one of them a large delete early in
// each round (`largeDelete`), and prints `ack SEQ REQUEST-ID` for each commit the
// writer acknowledged. The parent SIGKILLs it after a random delay,
// then reopens the directory and checks every acknowledged commit.
//
// Each round checks what is new since the previous one (``Checked``), so a round
// costs the same at kill 500 as at kill 1, and the whole log is checked once at the
// end: `make crash-soak` (500 kills) used to re-check the whole log every round.
//
// The child applies its commits to views, which are committed after the log and
// without fsync: a kill between the two leaves them behind, and every round's open
// catches them up as a server's does. Every 25th round (and at the end) the views
// must equal a rebuild from the log, table by table (`ViewVerifier`).

import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusTestSupport
import CumulusViews
import Foundation

#if canImport(Glibc)
import Glibc
#endif

struct Arguments {
    var child = false
    var notifyChild = false
    var container = ""
    var user = ""
    var kills = 20
    var dir = ".build/crash-test"
    var seed: UInt64 = 1

    init(_ argv: [String]) throws {
        var iterator = argv.dropFirst().makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--child": child = true
            case "--notify-child": notifyChild = true
            case "--container": container = iterator.next() ?? container
            case "--user": user = iterator.next() ?? user
            case "--kills": kills = Int(iterator.next() ?? "") ?? kills
            case "--dir": dir = iterator.next() ?? dir
            case "--seed": seed = UInt64(iterator.next() ?? "") ?? seed
            default: throw HarnessFailure("unknown argument \(argument)")
            }
        }
    }
}

struct HarnessFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

func openLog(_ dir: String) throws -> LogStore {
    var options = LMDBEnvironment.Options()
    options.mapSize = 8 << 20  // small, so crashes also land during map growth
    return try LogStore(environment: LMDBEnvironment(path: dir, options: options))
}

/// The log and its views, caught up as a server's open does (the views may be behind
/// after a kill).
func openWithViews(_ dir: String) throws -> (LogStore, Views) {
    let store = try openLog(dir)
    let views = try Views(environment: store.environment)
    try store.catchUpViews(applying: views.apply)
    return (store, views)
}

func writeLine(_ line: String) {
    let data = Array((line + "\n").utf8)
    data.withUnsafeBytes { _ = write(STDOUT_FILENO, $0.baseAddress, $0.count) }
}

// MARK: - Child: write until killed

func runChild(_ arguments: Arguments) async throws {
    let (store, views) = try openWithViews(arguments.dir)
    var options = LogWriter.Options()
    options.dictionary.firstTrainingAfter = 300
    options.dictionary.sampleCount = 300
    let writer = LogWriter(store: store, options: options) { commit, _, txn in try views.apply(commit, in: txn) }
    let start = Int(store.head.sequence) * 1000 + Int(arguments.seed % 1000)
    let largeDelete = try largeDelete(store, views, seed: arguments.seed)
    try await withThrowingTaskGroup(of: Void.self) { group in
        for lane in 0..<16 {
            group.addTask {
                var rng = SeededRandom(seed: arguments.seed &* 1_000_003 &+ UInt64(lane))
                var index = start + lane
                var saves = 0
                while true {
                    if lane == 0, saves == Int(arguments.seed % 4) + 1 {
                        let commit = try await writer.append(largeDelete)
                        writeLine("ack \(commit.sequence) \(largeDelete.requestID)")
                    }
                    saves += 1
                    let parts = SampleData.saveRequest(index, rng: &rng)
                    let request = CommitRequest(
                        actor: parts.actor, requestID: parts.requestID,
                        events: [.recordSaved(database: SampleData.database, record: parts.record, changedKeys: parts.changedKeys)])
                    let commit = try await writer.append(request)
                    writeLine("ack \(commit.sequence) \(request.requestID)")
                    index += 16
                }
            }
        }
        try await group.waitForAll()
    }
}

/// One large commit per round, as a cascade is: deletes of half the records earlier
/// rounds saved (up to a large commit's worth), padded with names no record has to
/// ``PendingTokens/directCommitEvents``, so its deletes leave delete markers that later
/// commits merge a batch at a time while kills land, and every 25th round's
/// comparison with a rebuild meets them pending.
func largeDelete(_ store: LogStore, _ views: Views, seed: UInt64) throws -> CommitRequest {
    let size = PendingTokens.directCommitEvents
    var stored: [RecordID] = []
    try store.environment.read { txn in
        try txn.scan(views.tables.records, prefix: []) { _, value in
            stored.append(try RecordReader(value).recordID)
            return stored.count < 2 * size
        }
    }
    var ids = Array(stored.prefix(stored.count / 2))
    ids += (ids.count..<size).map { RecordID(recordName: "never-\(seed)-\($0)", zoneID: SampleData.zone) }
    return CommitRequest(
        actor: SampleData.database.owner, requestID: "large-delete-\(seed)",
        events: ids.map { .recordDeleted(database: SampleData.database, recordID: $0, recordType: "TodoItem", cause: .direct) })
}

// MARK: - Parent: kill and check

func runParent(_ arguments: Arguments) throws {
    try? FileManager.default.removeItem(atPath: arguments.dir)
    var rng = SeededRandom(seed: UInt64(Date().timeIntervalSince1970 * 1000))
    var totalAcked = 0
    var failures: [String] = []
    var checked = Checked()
    let started = Date()
    let executable = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL
    for round in 1...arguments.kills {
        let process = Process()
        process.executableURL = executable
        process.arguments = ["--child", "--dir", arguments.dir, "--seed", String(round)]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let delay = 30 + Int(rng.next() % 400)
        usleep(UInt32(delay * 1000))
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        var acked: [(UInt64, String)] = []
        for line in output.split(separator: "\n") {
            let parts = line.split(separator: " ")
            // A line cut by the kill is not an acknowledgement.
            guard parts.count == 3, parts[0] == "ack", let sequence = UInt64(parts[1]) else { continue }
            acked.append((sequence, String(parts[2])))
        }
        totalAcked += acked.count
        do {
            try check(arguments.dir, acked: acked, since: &checked, compareViews: round % 25 == 0 || round == arguments.kills)
        } catch {
            failures.append("round \(round) (killed after \(delay) ms): \(error)")
        }
        // Unbuffered, so a long soak shows its progress as it goes.
        writeLine(String(
            format: "round %d/%d: killed after %d ms, %d acknowledged, head %llu, %.0f s", round, arguments.kills, delay,
            acked.count, checked.sequence, Date().timeIntervalSince(started)))
    }
    let store = try openLog(arguments.dir)
    // Once, the whole log: what the rounds checked piece by piece, end to end.
    let whole = try store.verifyChain()
    if !whole.isIntact || whole.verified != store.head.sequence { failures.append("the whole log: \(whole)") }
    print("crash harness: \(arguments.kills) kills, \(totalAcked) acknowledged commits checked, log head \(store.head)")
    print("\(arguments.kills - failures.count) passed, \(failures.count) failed")
    if !failures.isEmpty {
        for failure in failures { print("FAIL \(failure)") }
        exit(1)
    }
}

/// What the rounds so far have checked: the log through ``sequence``, whose chain
/// hash was ``hash``, and the zone feed through ``zoneFeedEntries``.
struct Checked {
    var sequence: UInt64 = 0
    var hash: [UInt8]?
    var zoneFeedEntries: UInt64 = 0
}

/// Every acknowledged commit present with its request ID; the log still ending in what
/// the last round checked (its boundary frame's chain hash unchanged, no gap: as many
/// frames as the head's sequence); the chain intact from there to a head that matches
/// the last frame; nothing stored beyond it; one zone feed entry per new commit.
/// Advances `checked` to the new head.
func check(_ dir: String, acked: [(UInt64, String)], since checked: inout Checked, compareViews: Bool) throws {
    let (store, views) = try openWithViews(dir)
    guard try store.appliedHead() == store.head else { throw HarnessFailure("the views did not catch up with the log") }
    let last = try store.lastSequence()
    for (sequence, requestID) in acked {
        guard sequence <= last else { throw HarnessFailure("acknowledged \(sequence) but head is \(last)") }
        guard let commit = try store.read(sequence) else { throw HarnessFailure("acknowledged commit \(sequence) missing") }
        guard commit.requestID == requestID else {
            throw HarnessFailure("commit \(sequence) holds \(commit.requestID), acknowledged \(requestID)")
        }
    }
    guard last >= checked.sequence else { throw HarnessFailure("head \(last) is behind the \(checked.sequence) checked before") }
    if checked.sequence > 0 {
        guard try store.chainHash(at: checked.sequence) == checked.hash else {
            throw HarnessFailure("commit \(checked.sequence), checked last round, changed")
        }
    }
    let log = try DataLayout.open(.log, in: store.logEnvironment)
    let frames = try store.logEnvironment.read { try $0.count(log) }
    guard frames == Int(last) else { throw HarnessFailure("\(frames) frames stored for head \(last): a gap") }
    let report = try store.verifyChain(from: checked.sequence + 1)
    guard report.isIntact, report.verified == last - checked.sequence else { throw HarnessFailure("\(report)") }
    guard try store.frameBytes(last + 1) == nil else { throw HarnessFailure("a frame exists beyond head \(last)") }
    let feed = try store.zoneFeed(SampleData.database, SampleData.zone, after: checked.zoneFeedEntries)
    let recordCommits = try store.range(from: checked.sequence + 1).filter { $0.events.contains { $0.zoneID != nil } }.count
    let total = checked.zoneFeedEntries + UInt64(feed.count)
    guard feed.count == recordCommits, feed.last.map({ $0.zoneSequence == total }) ?? true else {
        throw HarnessFailure("zone feed has \(feed.count) new entries for \(recordCommits) new commits")
    }
    if compareViews {
        let report = try ViewVerifier.verify(views, store: store)
        guard report.isHealthy else {
            throw HarnessFailure("the views differ from a rebuild: \(report.lines.joined(separator: "; "))")
        }
    }
    checked = Checked(sequence: last, hash: try store.chainHash(at: last), zoneFeedEntries: total)
}

do {
    let arguments = try Arguments(CommandLine.arguments)
    if arguments.child {
        try await runChild(arguments)
    } else if arguments.notifyChild {
        try await runNotifyChild(arguments)
    } else {
        try runParent(arguments)
    }
} catch {
    FileHandle.standardError.write(Data("cumulus-crash: \(error)\n".utf8))
    exit(2)
}
