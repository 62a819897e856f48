import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusTestSupport
import Foundation

/// Opens an environment + log in `directory`.
func openStore(_ directory: TemporaryDirectory, mapSize: Int = 64 << 20) throws -> LogStore {
    var options = LMDBEnvironment.Options()
    options.mapSize = mapSize
    return try LogStore(environment: LMDBEnvironment(path: directory.path, options: options))
}

/// What a follower's refusals are tested against: a leader and another log, each of
/// three sample saves (two histories), and an empty follower. `cleanup` removes all three.
struct ForeignLogs {
    let directories = [TemporaryDirectory("leader"), TemporaryDirectory("other"), TemporaryDirectory("follower")]
    let leader: LogStore
    let other: LogStore
    let follower: LogStore

    init(seed: UInt64) throws {
        leader = try openStore(directories[0])
        other = try openStore(directories[1])
        follower = try openStore(directories[2])
        var rng = SeededRandom(seed: seed)
        try appendDirect(leader, (0..<3).map { sampleRequest($0, rng: &rng) })
        try appendDirect(other, (0..<3).map { sampleRequest($0 + 10, rng: &rng) })
    }

    func cleanup() { directories.forEach { $0.remove() } }
}

/// A leader holding `commits` sample saves and an empty follower, for tests of a
/// follower appending the leader's frames. `cleanup` removes both.
struct LeaderAndFollower {
    let directories = [TemporaryDirectory("leader"), TemporaryDirectory("follower")]
    let leader: LogStore
    let follower: LogStore

    init(seed: UInt64, commits: Int) throws {
        leader = try openStore(directories[0])
        follower = try openStore(directories[1])
        var rng = SeededRandom(seed: seed)
        try appendDirect(leader, (0..<commits).map { sampleRequest($0, rng: &rng) })
    }

    func cleanup() { directories.forEach { $0.remove() } }
}

/// A commit request saving one sample record.
func sampleRequest(_ index: Int, rng: inout SeededRandom) -> CommitRequest {
    let parts = SampleData.saveRequest(index, rng: &rng)
    return CommitRequest(
        actor: parts.actor, requestID: parts.requestID,
        events: [.recordSaved(database: SampleData.database, record: parts.record, changedKeys: parts.changedKeys)],
        timestamp: Timestamp(millisecondsSince1970: 1_790_000_000_000 + Int64(index)))
}

/// Appends `requests` in one transaction without a writer, as tools and tests may.
@discardableResult
func appendDirect(_ store: LogStore, _ requests: [CommitRequest]) throws -> [Commit] {
    var commits: [Commit] = []
    let (_, outcome) = try store.appendWrite(catchUp: LogStore.withoutViews) { txn -> ((), AppendSession.Outcome) in
        commits = []
        var session = try store.beginAppend(in: txn)
        for request in requests {
            commits.append(try session.append(request, now: Timestamp(millisecondsSince1970: 0), in: txn).commit)
        }
        return ((), try session.finish(in: txn))
    }
    store.didCommit(outcome)
    return commits
}

extension RandomRecords {
    /// A random event of any kind.
    mutating func event() -> Event {
        let database = DatabaseID(
            container: "iCloud." + identifier(), environment: chance(0.5) ? .development : .production,
            scope: chance(0.2) ? .public : .private, owner: "_" + asciiName())
        switch int(0...8) {
        case 0, 1:
            var record = record()
            if database.scope == .public { record.recordID.zoneID = .default }
            return .recordSaved(database: database, record: record, changedKeys: Array(Set((0..<int(0...3)).map { _ in identifier() })))
        case 2:
            let cause: DeleteCause = [.direct, .zoneDeleted, .cascade(owner: recordID())][int(0...2)]
            return .recordDeleted(database: database, recordID: recordID(), recordType: identifier(), cause: cause)
        case 3:
            return .changeTagBumped(database: database, recordID: recordID(), changeTag: asciiName(maxLength: 8), source: recordID())
        case 4:
            return .zoneSaved(database: database, zone: Zone(zoneID: recordID().zoneID))
        case 5:
            return .zoneDeleted(database: database, zoneID: recordID().zoneID)
        case 6:
            return chance(0.5)
                ? .subscriptionSaved(database: database, subscriptionID: asciiName(), definition: (0..<int(0...30)).map { _ in UInt8(int(0...255)) })
                : .subscriptionDeleted(database: database, subscriptionID: asciiName())
        case 7:
            let zone = recordID().zoneID
            guard chance(0.7) else {
                return .shareDeleted(database: database, zoneID: zone, recordName: asciiName())
            }
            let participants = (0..<int(0...4)).map { _ in
                ShareParticipant(
                    userRecordName: "_" + asciiName(), permission: SharePermission.allCases[int(0...2)],
                    role: ShareParticipant.Role.allCases[int(0...2)],
                    acceptance: ShareParticipant.Acceptance.allCases[int(0...2)])
            }
            return .shareSaved(
                database: database,
                share: Share(
                    owner: database.owner, recordName: asciiName(), zoneID: zone,
                    rootRecordName: chance(0.5) ? nil : asciiName(), shortGUID: asciiName(maxLength: 26),
                    publicPermission: SharePermission.allCases[int(0...2)], participants: participants))
        default:
            return chance(0.8)
                ? .dictionaryInstalled(id: UInt32(int(1...1000)), bytes: (0..<int(0...30)).map { _ in UInt8(int(0...255)) })
                : .epochBegan(epoch: UInt64(int(1...1_000_000)))
        }
    }

    /// A random commit with consistent feed positions.
    mutating func commit(sequence: UInt64) -> Commit {
        let events = (0..<int(0...6)).map { _ in event() }
        let zones = Commit.touchedZones(of: events).map {
            ZoneSequence(database: $0.0, zoneID: $0.1, sequence: UInt64(int(1...1_000_000)))
        }
        let databases = Commit.touchedDatabases(of: events).map {
            DatabaseSequence(database: $0, sequence: UInt64(int(1...1_000_000)))
        }
        return Commit(
            sequence: sequence, timestamp: timestamp(), actor: chance(0.1) ? "" : "_" + asciiName(),
            requestID: asciiName(), clientChangeTokenData: chance(0.3) ? (0..<int(0...20)).map { _ in UInt8(int(0...255)) } : nil,
            events: events, zoneSequences: zones, databaseSequences: databases)
    }
}

/// Calls `body` with `count` damaged commit encodings, until it returns `false`: each
/// of 50 random commits' bytes in turn, cut short (even rounds) or with one byte changed
/// (odd rounds). What a decoder of untrusted commits is fuzzed with.
func forEachDamagedCommit(seed: UInt64, count: Int, _ body: (_ round: Int, _ bytes: [UInt8]) throws -> Bool) throws {
    var random = RandomRecords(seed: seed)
    let valid = try (0..<50).map { try CommitCodec.encode(random.commit(sequence: UInt64($0 + 1))) }
    for round in 0..<count {
        var bytes = valid[round % valid.count]
        if round % 2 == 0 {
            bytes = Array(bytes.prefix(random.int(0...max(bytes.count - 1, 0))))
        } else if !bytes.isEmpty {
            bytes[random.int(0...bytes.count - 1)] ^= UInt8(random.int(1...255))
        }
        guard try body(round, bytes) else { return }
    }
}
