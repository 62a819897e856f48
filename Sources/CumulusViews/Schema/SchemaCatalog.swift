import CumulusLog
import CumulusModel
import CumulusStorage
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Schemas and role assignments as views: where each container environment's
/// schema is stored, read back and cached.
///
/// The cache is keyed by the stored bytes, compared on every read (a schema's text
/// is a few kilobytes; comparing costs far less than parsing): a transaction that
/// wrote a schema and then aborted leaves bytes the cache does not match, so no
/// reader, in any transaction, can see a schema its snapshot does not hold.
final class SchemaCatalog: Sendable {
    private struct Entry {
        let bytes: [UInt8]
        let schema: EffectiveSchema
        /// Unique to this entry (``StampedSchema``).
        let stamp: UInt64
    }

    private let entries = Mutex<[SchemaID: Entry]>([:])
    /// The last stamp given; 1 and 2 are the empty schemas of development and production.
    private let lastStamp = Atomic<UInt64>(2)

    private func nextStamp() -> UInt64 {
        lastStamp.add(1, ordering: .relaxed).newValue
    }

    /// `schemas` / `userRoles` / `schemaZones` key prefix: container ‖ 0x00 ‖ u8 environment.
    /// Container identifiers hold no NUL, so the prefix of one container never
    /// prefixes another's.
    static func key(_ id: SchemaID) -> [UInt8] {
        Array(id.container.utf8) + [0, id.environment.rawValue]
    }

    /// The container environment and zone key of a `schemaZones` key (``key(_:)`` ‖
    /// zone key); `nil` if malformed.
    static func schemaZone(_ key: UnsafeRawBufferPointer) -> (id: SchemaID, zoneKey: [UInt8])? {
        guard key.count > FeedKeys.length + 2, let separator = key.firstIndex(of: 0),
            separator + 2 + FeedKeys.length == key.count,
            let environment = DatabaseID.Environment(rawValue: key[separator + 1])
        else { return nil }
        let container = String(decoding: UnsafeRawBufferPointer(rebasing: key[..<separator]), as: UTF8.self)
        return (SchemaID(container: container, environment: environment), Array(key[(separator + 2)...]))
    }

    /// The schema stored for `id` (empty if none) with its rules, as `txn` sees it.
    func schema(_ id: SchemaID, table: LMDBTable, in txn: LMDBReadTransaction) throws -> EffectiveSchema {
        try stampedSchema(id, table: table, in: txn).schema
    }

    /// ``schema(_:table:in:)`` with its stamp. With `remember` false a schema not
    /// cached is parsed without replacing the cached one: a reader of an older
    /// snapshot (one deriving ahead of the writer) must not make the writer parse
    /// again on its next record.
    func stampedSchema(_ id: SchemaID, table: LMDBTable, in txn: LMDBReadTransaction, remember: Bool = true) throws
        -> StampedSchema
    {
        let cached = entries.withLock { $0[id] }
        let found = try txn.withValue(table, key: Self.key(id)) { buffer -> StampedSchema in
            // memcmp, not `elementsEqual`: this runs once per saved record.
            if let cached, cached.bytes.count == buffer.count,
                cached.bytes.withUnsafeBytes({ $0.count == 0 || memcmp($0.baseAddress!, buffer.baseAddress!, buffer.count) == 0 })
            {
                return StampedSchema(schema: cached.schema, stamp: cached.stamp)
            }
            let bytes = Array(buffer)
            let schema: EffectiveSchema
            do {
                schema = EffectiveSchema(try SchemaParser.parse(String(decoding: bytes, as: UTF8.self)), environment: id.environment)
            } catch {
                throw CumulusError(.internalError, "the stored schema of \(id) does not parse: \(error)")
            }
            let entry = Entry(bytes: bytes, schema: schema, stamp: nextStamp())
            if remember { entries.withLock { $0[id] = entry } }
            return StampedSchema(schema: schema, stamp: entry.stamp)
        }
        if let found { return found }
        return empty[id.environment == .development ? 0 : 1]
    }

    /// The rules of the empty schema in each environment (development, production),
    /// stamped 1 and 2: every container's empty schema of one environment has the same rules.
    private let empty = [
        StampedSchema(schema: EffectiveSchema(.empty, environment: .development), stamp: 1),
        StampedSchema(schema: EffectiveSchema(.empty, environment: .production), stamp: 2),
    ]

    /// Stores `schema` as the schema of `id` (its canonical text).
    func store(_ schema: Schema, _ id: SchemaID, table: LMDBTable, in txn: LMDBWriteTransaction) throws {
        let bytes = Array(SchemaPrinter.print(schema).utf8)
        try txn.put(table, key: Self.key(id), value: bytes)
        let entry = Entry(bytes: bytes, schema: EffectiveSchema(schema, environment: id.environment), stamp: nextStamp())
        entries.withLock { $0[id] = entry }
    }
}
