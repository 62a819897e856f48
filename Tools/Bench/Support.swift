import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusTestSupport
import Foundation

/// A fresh directory under /tmp for one measurement, removed by `remove()` unless
/// `CUMULUS_BENCH_KEEP` is set (to inspect or `cumulus verify` what a run wrote).
/// Every measurement gets its own: LMDB must never open one path twice in a process,
/// and a fresh file keeps one measurement's free pages from helping the next.
struct ScratchDirectory {
    let path: String

    init(_ label: String) {
        path = "/tmp/cumulus-bench-\(label)-\(UUID().uuidString)"
    }

    func remove() {
        guard ProcessInfo.processInfo.environment["CUMULUS_BENCH_KEEP"] == nil else { return }
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Size of the log environment's data file in bytes (0 if absent).
    var logFileSize: Int { Self.size(DataLayout.logPath(path) + "/data.mdb") }

    private static func size(_ file: String) -> Int {
        let attributes = try? FileManager.default.attributesOfItem(atPath: file)
        return (attributes?[.size] as? NSNumber)?.intValue ?? 0
    }
}

/// Wall time of `body` by `ContinuousClock`, in seconds.
func measure(_ body: () throws -> Void) rethrows -> Double {
    let clock = ContinuousClock()
    let start = clock.now
    try body()
    return seconds(clock.now - start)
}

/// Wall time of an async `body` by `ContinuousClock`, in seconds.
func measureAsync(_ body: () async throws -> Void) async rethrows -> Double {
    let clock = ContinuousClock()
    let start = clock.now
    try await body()
    return seconds(clock.now - start)
}

func seconds(_ duration: Duration) -> Double {
    let parts = duration.components
    return Double(parts.seconds) + Double(parts.attoseconds) * 1e-18
}

/// A benchmark failed to run (not a missed target: that is reported, not thrown).
struct BenchFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Pre-generated workload: commit requests and, for the raw baselines, the exact
/// commit bytes the log will compress and chain for them.
///
/// Generation is not the log's cost, so it happens before any clock starts.
struct Workload: Sendable {
    /// One single-record save per element (about 400 bytes of record).
    let requests: [CommitRequest]
    /// `CommitCodec.encode` of the commit request `i` becomes when it is the log's
    /// commit `i + 1` (sequence, zone and database positions all `i + 1`, since every
    /// sample lives in one zone of one database).
    let commitBytes: [[UInt8]]

    var count: Int { requests.count }
    var totalBytes: Int { commitBytes.reduce(0) { $0 + $1.count } }

    /// Generates `count` requests with `SampleData`, in parallel chunks seeded by
    /// chunk number so every run produces the same data. `database` is where the saves
    /// go (the sample's development database unless said otherwise).
    static func make(count: Int, seed: UInt64 = 1, database: DatabaseID = SampleData.database) async throws -> Workload {
        let chunk = 10_000
        let chunks = (count + chunk - 1) / chunk
        let parts = try await withThrowingTaskGroup(of: (Int, [CommitRequest], [[UInt8]]).self) { group in
            for index in 0..<chunks {
                group.addTask {
                    let range = index * chunk..<min(count, (index + 1) * chunk)
                    var rng = SeededRandom(seed: seed &* 1_000_003 &+ UInt64(index))
                    var requests: [CommitRequest] = []
                    var bytes: [[UInt8]] = []
                    requests.reserveCapacity(range.count)
                    bytes.reserveCapacity(range.count)
                    for i in range {
                        let request = saveRequest(i, rng: &rng, database: database)
                        requests.append(request)
                        bytes.append(
                            try CommitCodec.encode(expectedCommit(request, sequence: UInt64(i + 1), database: database)))
                    }
                    return (index, requests, bytes)
                }
            }
            var parts = Array(repeating: ([CommitRequest](), [[UInt8]]()), count: chunks)
            for try await (index, requests, bytes) in group { parts[index] = (requests, bytes) }
            return parts
        }
        return Workload(requests: parts.flatMap(\.0), commitBytes: parts.flatMap(\.1))
    }

    /// A commit request saving the `index`th sample to-do item, with a fixed commit
    /// time so its bytes are known in advance.
    static func saveRequest(_ index: Int, rng: inout SeededRandom, database: DatabaseID = SampleData.database)
        -> CommitRequest
    {
        let parts = SampleData.saveRequest(index, rng: &rng)
        return CommitRequest(
            actor: parts.actor, requestID: parts.requestID,
            events: [.recordSaved(database: database, record: parts.record, changedKeys: parts.changedKeys)],
            timestamp: Timestamp(millisecondsSince1970: 1_790_000_000_000 + Int64(index)))
    }

    /// The commit the log makes of `request` at `sequence` in a log holding only
    /// sample saves (one zone, one database: both positions equal the sequence).
    static func expectedCommit(_ request: CommitRequest, sequence: UInt64, database: DatabaseID = SampleData.database)
        -> Commit
    {
        Commit(
            sequence: sequence, timestamp: request.timestamp ?? Timestamp(millisecondsSince1970: 0),
            actor: request.actor, requestID: request.requestID, clientChangeTokenData: request.clientChangeTokenData,
            events: request.events.map(\.canonical),
            zoneSequences: [ZoneSequence(database: database, zoneID: SampleData.zone, sequence: sequence)],
            databaseSequences: [DatabaseSequence(database: database, sequence: sequence)])
    }
}

/// Opens a durable (default options) log in `directory`; `mapSize` only reserves
/// address space, so bulk runs pass a large one to avoid map growth mid-run.
func openLog(_ directory: ScratchDirectory, mapSize: Int? = nil, durable: Bool = true) throws -> LogStore {
    var options = LMDBEnvironment.Options()
    if let mapSize { options.mapSize = mapSize }
    options.durable = durable
    return try LogStore(environment: LMDBEnvironment(path: directory.path, options: options))
}

/// Appends `requests[range]` from `submitters` concurrent tasks through `writer`,
/// each task taking every `submitters`-th request so all stay busy to the end.
func appendConcurrently(_ writer: LogWriter, _ requests: [CommitRequest], _ range: Range<Int>, submitters: Int)
    async throws
{
    try await withThrowingTaskGroup(of: Void.self) { group in
        for lane in 0..<submitters {
            group.addTask {
                var index = range.lowerBound + lane
                while index < range.upperBound {
                    try await writer.append(requests[index])
                    index += submitters
                }
            }
        }
        try await group.waitForAll()
    }
}
