/// A deterministic binary form of a ``Query``, so a cursor can carry the query it
/// continues (CloudKit: a cursor-based fetch ignores the query it is given).
/// Layout in `Docs/LOG-FORMAT.md` §10.
public enum QueryCodec {
    /// The format byte.
    public static let formatVersion: UInt8 = 1

    /// Encodes `query`; throws only for values with no canonical form (NaN).
    public static func encode(_ query: Query, into writer: inout BinaryWriter) throws {
        writer.u8(formatVersion)
        writer.string(query.recordType)
        writer.u8(query.matchesNothing ? 1 : 0)
        writer.length(query.filters.count)
        for filter in query.filters {
            writeKey(filter.key, into: &writer)
            writer.string(filter.comparator.rawValue)
            try RecordCodec.writeValue(filter.value, home: .default, into: &writer)
            if let distance = filter.distance {
                writer.u8(1)
                guard distance.isFinite else { throw CumulusError(.invalidArguments, "distance must be finite") }
                writer.double(distance)
            } else {
                writer.u8(0)
            }
        }
        writer.length(query.sort.count)
        for sort in query.sort {
            writeKey(sort.key, into: &writer)
            writer.u8(sort.ascending ? 1 : 0)
            if let location = sort.relativeLocation {
                writer.u8(1)
                try RecordCodec.writeScalar(.location(location), home: .default, into: &writer)
            } else {
                writer.u8(0)
            }
        }
    }

    /// Decodes a query written by ``encode(_:into:)``.
    public static func decode(from reader: inout BinaryReader) throws -> Query {
        guard try reader.u8() == formatVersion else { throw reader.failure("unsupported query format") }
        var query = Query(recordType: try reader.string())
        query.matchesNothing = try reader.u8() == 1
        for _ in 0..<(try reader.length(minimumItemSize: 4)) {
            let key = try readKey(from: &reader)
            let rawComparator = try reader.string()
            guard let comparator = QueryComparator(rawValue: rawComparator) else {
                throw reader.failure("unknown comparator \(rawComparator)")
            }
            let value = try RecordCodec.readValue(home: .default, from: &reader)
            let distance: Double? = try reader.u8() == 1 ? try reader.double() : nil
            query.filters.append(QueryFilter(key: key, comparator: comparator, value: value, distance: distance))
        }
        for _ in 0..<(try reader.length(minimumItemSize: 3)) {
            let key = try readKey(from: &reader)
            let ascending = try reader.u8() == 1
            var location: Location?
            if try reader.u8() == 1, case .location(let l) = try RecordCodec.readScalar(.location, home: .default, from: &reader) {
                location = l
            }
            query.sort.append(QuerySort(key: key, ascending: ascending, relativeLocation: location))
        }
        return query
    }

    static func writeKey(_ key: QueryKey, into writer: inout BinaryWriter) {
        if case .field(let name) = key {
            writer.u8(0)
            writer.string(name)
        } else {
            writer.u8(1)
            writer.string(key.description)
        }
    }

    static func readKey(from reader: inout BinaryReader) throws -> QueryKey {
        let kind = try reader.u8()
        let name = try reader.string()
        return kind == 0 ? .field(name) : QueryKey(name: name)
    }
}
