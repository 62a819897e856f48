// cumulus-crash: kills a writing process at random moments and checks that the log
// kept every acknowledged commit, verifies, and shows nothing half-written.
//
//   cumulus-crash --kills 20 --dir .build/crash-test      (parent: the test)
//   cumulus-crash --child --dir DIR --seed N              (child: the victim)
//
// The child appends sample commits from 16 concurrent tasks through the group-commit
// writer (durable: fsync before acknowledging) and prints `ack SEQ REQUEST-ID` for
// each commit the writer acknowledged. The parent SIGKILLs it after a random delay,
// then reopens the directory and checks every acknowledged commit.

import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusTestSupport
import Foundation

#if canImport(Glibc)
import Glibc
#endif

struct Arguments {
    var child = false
    var kills = 20
    var dir = ".build/crash-test"
    var seed: UInt64 = 1

    init(_ argv: [String]) throws {
        var iterator = argv.dropFirst().makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--child": child = true
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

func writeLine(_ line: String) {
    let data = Array((line + "\n").utf8)
    data.withUnsafeBytes { _ = write(STDOUT_FILENO, $0.baseAddress, $0.count) }
}

// MARK: - Child: write until killed

func runChild(_ arguments: Arguments) async throws {
    let store = try openLog(arguments.dir)
    var options = LogWriter.Options()
    options.dictionary.firstTrainingAfter = 300
    options.dictionary.sampleCount = 300
    let writer = LogWriter(store: store, options: options)
    let start = Int(store.head.sequence) * 1000 + Int(arguments.seed % 1000)
    try await withThrowingTaskGroup(of: Void.self) { group in
        for lane in 0..<16 {
            group.addTask {
                var rng = SeededRandom(seed: arguments.seed &* 1_000_003 &+ UInt64(lane))
                var index = start + lane
                while true {
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

// MARK: - Parent: kill and check

func runParent(_ arguments: Arguments) throws {
    try? FileManager.default.removeItem(atPath: arguments.dir)
    var rng = SeededRandom(seed: UInt64(Date().timeIntervalSince1970 * 1000))
    var totalAcked = 0
    var failures: [String] = []
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
            try check(arguments.dir, acked: acked)
        } catch {
            failures.append("round \(round) (killed after \(delay) ms): \(error)")
        }
    }
    let store = try openLog(arguments.dir)
    print("crash harness: \(arguments.kills) kills, \(totalAcked) acknowledged commits checked, log head \(store.head)")
    print("\(arguments.kills - failures.count) passed, \(failures.count) failed")
    if !failures.isEmpty {
        for failure in failures { print("FAIL \(failure)") }
        exit(1)
    }
}

/// Every acknowledged commit present with its request ID, the chain intact up to a
/// head that matches the last frame, nothing stored beyond it, feeds consistent.
func check(_ dir: String, acked: [(UInt64, String)]) throws {
    let store = try openLog(dir)
    let last = try store.lastSequence()
    for (sequence, requestID) in acked {
        guard sequence <= last else { throw HarnessFailure("acknowledged \(sequence) but head is \(last)") }
        guard let commit = try store.read(sequence) else { throw HarnessFailure("acknowledged commit \(sequence) missing") }
        guard commit.requestID == requestID else {
            throw HarnessFailure("commit \(sequence) holds \(commit.requestID), acknowledged \(requestID)")
        }
    }
    let report = try store.verifyChain()
    guard report.isIntact, report.verified == last else { throw HarnessFailure("\(report)") }
    guard try store.frameBytes(last + 1) == nil else { throw HarnessFailure("a frame exists beyond head \(last)") }
    let feed = try store.zoneFeed(SampleData.database, SampleData.zone, after: 0)
    let recordCommits = try store.range(from: 1).filter { $0.events.contains { $0.zoneID != nil } }.count
    guard feed.count == recordCommits, feed.last.map({ $0.zoneSequence == UInt64(feed.count) }) ?? true else {
        throw HarnessFailure("zone feed has \(feed.count) entries for \(recordCommits) commits")
    }
}

do {
    let arguments = try Arguments(CommandLine.arguments)
    if arguments.child {
        try await runChild(arguments)
    } else {
        try runParent(arguments)
    }
} catch {
    FileHandle.standardError.write(Data("cumulus-crash: \(error)\n".utf8))
    exit(2)
}
