import CumulusModel

/// The deterministic binary form of a ``Commit`` (format 1) — the bytes the hash
/// chain covers and the frame compresses. `Docs/LOG-FORMAT.md` §5.
public enum CommitCodec {
    /// The format byte this version writes and reads.
    public static let formatVersion: UInt8 = 1

    /// Encodes `commit`. Throws only if an event holds a record with no canonical form.
    public static func encode(_ commit: Commit) throws -> [UInt8] {
        var writer = BinaryWriter(capacity: 512)
        writer.u8(formatVersion)
        writer.u64(commit.sequence)
        writer.zigzag(commit.timestamp.millisecondsSince1970)
        writer.string(commit.actor)
        writer.string(commit.requestID)
        if let token = commit.clientChangeTokenData {
            writer.u8(1)
            writer.blob(token)
        } else {
            writer.u8(0)
        }
        writer.length(commit.events.count)
        for event in commit.events { try EventCodec.encode(event, into: &writer) }
        writer.length(commit.zoneSequences.count)
        for position in commit.zoneSequences {
            writer.databaseID(position.database)
            writer.zoneID(position.zoneID)
            writer.varint(position.sequence)
        }
        writer.length(commit.databaseSequences.count)
        for position in commit.databaseSequences {
            writer.databaseID(position.database)
            writer.varint(position.sequence)
        }
        return writer.bytes
    }

    /// Decodes a commit from untrusted bytes. Besides the layout it checks that the
    /// feed positions name exactly the zones and databases the events touch, in
    /// order, so a decoded commit is always one the log could have written.
    public static func decode(_ buffer: UnsafeRawBufferPointer) throws -> Commit {
        try CommitView(parsing: buffer).decodeCommit()
    }

    /// The rest of a commit whose header `view` parsed, from `reader` at its first
    /// event: the one decoder of events and feed positions.
    static func decodeBody(of view: CommitView, from reader: inout BinaryReader) throws -> Commit {
        let eventCount = view.eventCount
        var events: [Event] = []
        events.reserveCapacity(eventCount)
        for _ in 0..<eventCount { events.append(try EventCodec.decode(from: &reader)) }

        let zoneCount = try reader.length()
        var zones: [ZoneSequence] = []
        zones.reserveCapacity(zoneCount)
        for _ in 0..<zoneCount {
            let database = try reader.databaseID()
            let zone = try reader.zoneID()
            let position = try reader.varint()
            guard position > 0 else { throw reader.failure("zone sequence 0") }
            zones.append(ZoneSequence(database: database, zoneID: zone, sequence: position))
        }
        let databaseCount = try reader.length()
        var databases: [DatabaseSequence] = []
        databases.reserveCapacity(databaseCount)
        for _ in 0..<databaseCount {
            let database = try reader.databaseID()
            let position = try reader.varint()
            guard position > 0 else { throw reader.failure("database sequence 0") }
            databases.append(DatabaseSequence(database: database, sequence: position))
        }
        try reader.expectEnd()

        let expectedZones = Commit.touchedZones(of: events)
        guard expectedZones.count == zones.count,
            zip(expectedZones, zones).allSatisfy({ $0.0 == $1.database && $0.1 == $1.zoneID })
        else { throw reader.failure("zone sequences do not match the zones the events touch") }
        let expectedDatabases = Commit.touchedDatabases(of: events)
        guard expectedDatabases == databases.map(\.database) else {
            throw reader.failure("database sequences do not match the databases the events touch")
        }
        return Commit(
            sequence: view.sequence, timestamp: view.timestamp, actor: view.actor, requestID: view.requestID,
            clientChangeTokenData: view.clientChangeTokenData, events: events, zoneSequences: zones,
            databaseSequences: databases)
    }

    /// Decodes a commit from a byte array.
    public static func decode(_ bytes: [UInt8]) throws -> Commit {
        try bytes.withUnsafeBytes { try decode($0) }
    }
}
