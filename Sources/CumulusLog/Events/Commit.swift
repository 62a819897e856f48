import CumulusModel

/// The position a commit takes in one zone's change feed.
public struct ZoneSequence: Sendable, Hashable {
    /// The zone's database.
    public var database: DatabaseID
    /// The zone.
    public var zoneID: ZoneID
    /// The zone's sequence number for this commit (1 for its first commit).
    public var sequence: UInt64

    /// A zone position.
    public init(database: DatabaseID, zoneID: ZoneID, sequence: UInt64) {
        self.database = database
        self.zoneID = zoneID
        self.sequence = sequence
    }
}

/// The position a commit takes in one database's change feed.
public struct DatabaseSequence: Sendable, Hashable {
    /// The database.
    public var database: DatabaseID
    /// The database's sequence number for this commit.
    public var sequence: UInt64

    /// A database position.
    public init(database: DatabaseID, sequence: UInt64) {
        self.database = database
        self.sequence = sequence
    }
}

/// What a caller hands the log: one operation's events and who asked. The log
/// gives it a sequence and feed positions and so makes it a ``Commit``.
public struct CommitRequest: Sendable {
    /// When the operation ran; the writer fills in the commit time if `nil`.
    public var timestamp: Timestamp?
    /// The acting user's record name (empty for the system itself).
    public var actor: String
    /// The request's ID, for tracing and audit.
    public var requestID: String
    /// The client's `clientChangeTokenData`, echoed by zone change fetches.
    public var clientChangeTokenData: [UInt8]?
    /// The operation's events, in the order they apply.
    public var events: [Event]
    /// Work for applying `events` done before the request reached the writer (the
    /// views' derivations of the records it saves, made on the caller's task),
    /// handed to the writer's ``LogWriter/Applier`` with the commit. Not stored, and
    /// not part of what the request means: the commit is the same without it.
    public var workAhead: (any Sendable)?

    /// A request to commit `events`.
    public init(
        actor: String, requestID: String, clientChangeTokenData: [UInt8]? = nil, events: [Event],
        timestamp: Timestamp? = nil
    ) {
        self.actor = actor
        self.requestID = requestID
        self.clientChangeTokenData = clientChangeTokenData
        self.events = events
        self.timestamp = timestamp
    }
}

/// One operation, as stored (`Docs/LOG-FORMAT.md` §5): its events, when and by whom, and where it
/// sits in the global log and in each zone's and database's feed.
public struct Commit: Sendable, Hashable {
    /// Global sequence number, from 1, without gaps.
    public var sequence: UInt64
    /// Commit time.
    public var timestamp: Timestamp
    /// The acting user's record name (empty for the system itself).
    public var actor: String
    /// The request's ID.
    public var requestID: String
    /// The client's `clientChangeTokenData`, if it sent one.
    public var clientChangeTokenData: [UInt8]?
    /// The events, in the order they apply.
    public var events: [Event]
    /// This commit's position in each zone it touches, sorted by database then zone.
    public var zoneSequences: [ZoneSequence]
    /// This commit's position in each database it touches, sorted by database.
    public var databaseSequences: [DatabaseSequence]

    /// A commit; the log store builds these, tests and followers decode them.
    public init(
        sequence: UInt64, timestamp: Timestamp, actor: String, requestID: String,
        clientChangeTokenData: [UInt8]?, events: [Event], zoneSequences: [ZoneSequence],
        databaseSequences: [DatabaseSequence]
    ) {
        self.sequence = sequence
        self.timestamp = timestamp
        self.actor = actor
        self.requestID = requestID
        self.clientChangeTokenData = clientChangeTokenData
        self.events = events
        self.zoneSequences = zoneSequences
        self.databaseSequences = databaseSequences
    }

    /// The (database, zone) pairs the events touch, sorted and unique.
    public static func touchedZones(of events: [Event]) -> [(DatabaseID, ZoneID)] {
        // Most commits touch one zone: answer without a set, a sort and their hashing
        // (which cost more than the rest of positioning a commit). The first event's
        // pair is kept, as inserting the others into a set would keep it.
        if let single = singleZone(of: events) { return single.map { [($0.database, $0.zoneID)] } ?? [] }
        var seen = Set<ZoneKey>()
        for event in events {
            if let database = event.database, let zone = event.zoneID { seen.insert(ZoneKey(database, zone)) }
        }
        return seen.sorted().map { ($0.database, $0.zoneID) }
    }

    /// The databases the events touch, sorted and unique.
    public static func touchedDatabases(of events: [Event]) -> [DatabaseID] {
        // One database (the usual case): no set, no sort; keeps the first, as a set would.
        var first: DatabaseID?
        var several = false
        for event in events {
            guard let database = event.database else { continue }
            if let first {
                if first != database {
                    several = true
                    break
                }
            } else {
                first = database
            }
        }
        if !several { return first.map { [$0] } ?? [] }
        return Set(events.compactMap(\.database)).sorted()
    }

    /// `.some(pair)` when every event with a zone names the same (database, zone)
    /// pair (`.some(nil)` when none has one); `nil` when they name several.
    private static func singleZone(of events: [Event]) -> ZoneKey?? {
        var first: ZoneKey?
        for event in events {
            guard let database = event.database, let zone = event.zoneID else { continue }
            if let first {
                if first.database != database || first.zoneID != zone { return nil }
            } else {
                first = ZoneKey(database, zone)
            }
        }
        return .some(first)
    }
}

/// A (database, zone) pair as a dictionary key.
public struct ZoneKey: Sendable, Hashable, Comparable {
    /// The database.
    public var database: DatabaseID
    /// The zone.
    public var zoneID: ZoneID

    /// A zone key.
    public init(_ database: DatabaseID, _ zoneID: ZoneID) {
        self.database = database
        self.zoneID = zoneID
    }

    /// Database order, then zone order.
    public static func < (lhs: ZoneKey, rhs: ZoneKey) -> Bool {
        lhs.database != rhs.database ? lhs.database < rhs.database : lhs.zoneID < rhs.zoneID
    }
}
