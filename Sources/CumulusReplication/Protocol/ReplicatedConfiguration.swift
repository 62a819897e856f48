import CumulusLog
import CumulusModel
import CumulusStorage

/// The parts of a leader's data directory that are not log events but that a
/// follower must share to serve the same clients: credentials (the `auth` table —
/// only hashes of tokens) and the server secret that seals cursors and change tokens
/// (the `secrets` table). They travel whole: they are small, and replacing them
/// whole leaves no revoked token behind.
public struct ReplicatedConfiguration: Sendable, Hashable {
    /// The tables copied, in order.
    public static let tables = DataLayout.configurationTables.map(\.rawValue)

    /// Each table's entries, in key order.
    public var entries: [String: [Entry]]

    /// One key and value.
    public struct Entry: Sendable, Hashable {
        /// The key.
        public var key: [UInt8]
        /// The value.
        public var value: [UInt8]
    }

    /// A configuration holding `entries`.
    public init(entries: [String: [Entry]]) {
        self.entries = entries
    }

    /// Reads the tables from `environment` in one snapshot.
    public static func read(from environment: LMDBEnvironment) throws -> ReplicatedConfiguration {
        let handles = try DataLayout.configurationTables.map { try DataLayout.open($0, in: environment) }
        return try environment.read { txn in
            var entries: [String: [Entry]] = [:]
            for (name, table) in zip(tables, handles) {
                var list: [Entry] = []
                try txn.scan(table) { key, value in
                    list.append(Entry(key: Array(key), value: Array(value)))
                    return true
                }
                entries[name] = list
            }
            return ReplicatedConfiguration(entries: entries)
        }
    }

    /// Opens the tables in `environment` (outside any transaction, as LMDB requires).
    public static func openTables(in environment: LMDBEnvironment) throws -> [String: LMDBTable] {
        var handles: [String: LMDBTable] = [:]
        for table in DataLayout.configurationTables { handles[table.rawValue] = try DataLayout.open(table, in: environment) }
        return handles
    }

    /// Replaces the tables in `txn` with these entries; `handles` from ``openTables(in:)``.
    public func write(to handles: [String: LMDBTable], in txn: LMDBWriteTransaction) throws {
        for name in Self.tables {
            guard let table = handles[name] else { continue }
            var stale: [[UInt8]] = []
            try txn.scan(table) { key, _ in
                stale.append(Array(key))
                return true
            }
            for key in stale { _ = try txn.delete(table, key: key) }
            for entry in entries[name] ?? [] { try txn.put(table, key: entry.key, value: entry.value) }
        }
    }

    /// The server secret in this configuration, if any.
    public var serverSecret: [UInt8]? {
        entries[DataLayout.Table.secrets.rawValue]?.first { $0.key == DataLayout.serverSecretKey }?.value
    }

    func encode(into writer: inout BinaryWriter) {
        writer.length(Self.tables.count)
        for name in Self.tables {
            let list = entries[name] ?? []
            writer.string(name)
            writer.length(list.count)
            for entry in list {
                writer.blob(entry.key)
                writer.blob(entry.value)
            }
        }
    }

    /// Refuses a configuration that does not list every table exactly once: applying
    /// one treats a missing table as empty and clears it (credentials, the server
    /// secret), so a truncated or partial message must never get that far. Found by
    /// fuzzing (`Tools/Fuzz/Corpus/replication-message/crash-*`).
    static func decode(from reader: inout BinaryReader) throws -> ReplicatedConfiguration {
        var entries: [String: [Entry]] = [:]
        let count = try reader.length()
        guard count == tables.count else {
            throw ReplicationError.protocolViolation("a configuration lists \(count) tables, not \(tables.count)")
        }
        for _ in 0..<count {
            let name = try reader.string()
            guard tables.contains(name) else { throw ReplicationError.protocolViolation("unknown configuration table \(name)") }
            guard entries[name] == nil else { throw ReplicationError.protocolViolation("configuration table \(name) listed twice") }
            var list: [Entry] = []
            for _ in 0..<(try reader.length(minimumItemSize: 2)) {
                let key = try reader.blob()
                let value = try reader.blob()
                guard !key.isEmpty else { throw ReplicationError.protocolViolation("an empty key in table \(name)") }
                list.append(Entry(key: key, value: value))
            }
            entries[name] = list
        }
        return ReplicatedConfiguration(entries: entries)
    }
}
