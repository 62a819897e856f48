import CumulusLog
import CumulusModel
import CumulusStorage

/// The reference graph in both directions: `refsOut` (what a record refers to) and
/// `refsIn` (who refers to a record, grouped by action), kept in step on every save.
extension Views {
    /// Makes `new` the references the record `source` of the zone `zoneKey` holds (none:
    /// deleted), rewriting only the edges that change. Without `existed` the record was
    /// not stored, so it held no edges and nothing is read for them (`refsOut` is kept
    /// for current records only).
    func replaceReferences(
        of source: String, zoneKey: [UInt8], with new: [OutgoingReference], existed: Bool = true,
        _ txn: LMDBWriteTransaction
    ) throws {
        let old = existed ? try outgoing(zoneKey, source, in: txn) : []
        try replaceReferences(zoneKey, source: source, old: old, new: new, txn)
    }

    /// Rewrites the edges of `source` from `old` to `new` in both directions.
    func replaceReferences(
        _ zoneKey: [UInt8], source: String, old: [OutgoingReference], new: [OutgoingReference],
        _ txn: LMDBWriteTransaction
    ) throws {
        guard old != new else { return }
        let sourceBytes = Array(source.utf8)
        // Both lists are sorted and unique (`OutgoingReference.of`, and as stored), so
        // one merge walk finds the edges only in one of them: two `Set`s per saved
        // record were a fifth of saving one in a replay's profile. Made so again all
        // the same, which costs nothing for the one or two edges a record holds, so the
        // walk is right even for a list that is not.
        func sortedUnique(_ edges: [OutgoingReference]) -> [OutgoingReference] {
            guard edges.count > 1 else { return edges }
            var result: [OutgoingReference] = []
            for edge in edges.sorted() where result.last != edge { result.append(edge) }
            return result
        }
        let old = sortedUnique(old)
        let new = sortedUnique(new)
        var i = 0
        var j = 0
        while i < old.count || j < new.count {
            if j == new.count || (i < old.count && old[i] < new[j]) {
                _ = try txn.delete(
                    tables.refsIn, key: ViewKeys.target(zoneKey, old[i].targetName),
                    value: [old[i].action.rawValue] + sourceBytes)
                i += 1
            } else if i == old.count || new[j] < old[i] {
                try txn.put(
                    tables.refsIn, key: ViewKeys.target(zoneKey, new[j].targetName),
                    value: [new[j].action.rawValue] + sourceBytes, flags: .noDupData)
                j += 1
            } else {
                i += 1
                j += 1
            }
        }
        let key = ViewKeys.record(zoneKey, source)
        if new.isEmpty {
            _ = try txn.delete(tables.refsOut, key: key)
        } else {
            var writer = BinaryWriter(capacity: 16 * new.count)
            writer.length(new.count)
            for edge in new {
                writer.u8(edge.action.rawValue)
                writer.string(edge.targetName)
            }
            try txn.put(tables.refsOut, key: key, value: writer.bytes)
        }
    }

    /// The references record `name` holds, from the graph (sorted, unique).
    public func outgoing(_ zoneKey: [UInt8], _ name: String, in txn: LMDBReadTransaction) throws -> [OutgoingReference] {
        try txn.withValue(tables.refsOut, key: ViewKeys.record(zoneKey, name)) { buffer in
            var reader = BinaryReader(buffer, context: "refsOut")
            var edges: [OutgoingReference] = []
            for _ in 0..<(try reader.length(minimumItemSize: 2)) {
                let raw = try reader.u8()
                guard let action = Reference.Action(rawValue: raw) else { throw reader.failure("bad action \(raw)") }
                edges.append(OutgoingReference(targetName: try reader.string(), action: action))
            }
            return edges
        } ?? []
    }

    /// Whether `source` refers to record `target` of the zone `zoneKey` with `action`:
    /// one lookup, without reading the target's other referrers.
    public func refers(
        _ source: String, to target: String, action: Reference.Action, zoneKey: [UInt8], in txn: LMDBReadTransaction
    ) throws -> Bool {
        try txn.contains(tables.refsIn, key: ViewKeys.target(zoneKey, target), value: [action.rawValue] + Array(source.utf8))
    }

    /// How many records refer to record `target` of the zone `zoneKey` with `action`,
    /// counted from the stored entries without decoding the referrers' names.
    public func incomingCount(
        _ zoneKey: [UInt8], _ target: String, action: Reference.Action, in txn: LMDBReadTransaction
    ) throws -> Int {
        var count = 0
        try txn.values(tables.refsIn, key: ViewKeys.target(zoneKey, target)) { value in
            // Values sort by their action byte first: past it, none of `action` follow.
            guard let raw = value.first, raw <= action.rawValue else { return false }
            if raw == action.rawValue { count += 1 }
            return true
        }
        return count
    }

    /// Who refers to record `target` in the zone `zoneKey`: (action, source name) pairs,
    /// grouped by action (none, deleteSelf, validate), sources in byte order.
    public func incoming(_ zoneKey: [UInt8], _ target: String, in txn: LMDBReadTransaction) throws
        -> [(action: Reference.Action, source: String)]
    {
        var result: [(Reference.Action, String)] = []
        try txn.values(tables.refsIn, key: ViewKeys.target(zoneKey, target)) { value in
            guard let raw = value.first, let action = Reference.Action(rawValue: raw) else {
                throw CumulusError(.internalError, "malformed refsIn entry for \(target)")
            }
            result.append((action, String(decoding: UnsafeRawBufferPointer(rebasing: value[1...]), as: UTF8.self)))
            return true
        }
        return result
    }
}
