import Synchronization

/// A stored record's user fields and encrypted values, kept in ``RecordCodec``'s
/// bytes until something reads them: what a fetch, a query or a change feed returns,
/// so a caller that reads three fields of a page of records pays for three fields,
/// not for every value of every record (SQLite hands back its row blob the same way).
///
/// The bytes are the two sections that end a stored record, copied out of the view
/// (the only copy a result needs once its read transaction ends):
/// ```
/// length  field count,     then (string key, value) in ascending UTF-8 key order
/// length  encrypted count, then (string key, value) likewise
/// ```
///
/// **Checked once.** ``init(checking:home:)`` walks every value with the checks a full
/// decode makes (bounds, tags, key order, reference modes and actions, finite
/// doubles, no typed empty list), so the decoders below cannot meet bytes they
/// reject. They stay non-throwing because a record's accessors do.
///
/// **Shared cache.** The first read of every value decodes the section once and
/// keeps it, so a caller that touches `fields` repeatedly does not decode repeatedly;
/// copies of a record share the cache, which holds what the immutable bytes decode to.
final class EncodedValues: Sendable {
    /// The two sections, as stored.
    let bytes: [UInt8]
    /// The record's zone: references in it are stored without their zone.
    let home: ZoneID
    /// Where the encrypted section's count starts in `bytes`.
    let encryptedOffset: Int
    /// Both sections decoded, once asked for.
    private let decoded = Mutex<(fields: [String: FieldValue], encrypted: [String: FieldValue])?>(nil)

    /// Checks the two sections at `reader`'s offset and copies them, leaving `reader`
    /// just past them.
    /// - Throws: `invalidArguments` naming the offset and the problem, as
    ///   ``RecordCodec/decode(_:)`` would for the same bytes.
    init(checking reader: inout BinaryReader, home: ZoneID) throws {
        let start = reader.offset
        try Self.checkSection(&reader, home: home)
        let encryptedOffset = reader.offset - start
        try Self.checkSection(&reader, home: home)
        self.bytes = Array(UnsafeRawBufferPointer(rebasing: reader.buffer[start..<reader.offset]))
        self.home = home
        self.encryptedOffset = encryptedOffset
    }

    /// The user fields, decoded.
    var fields: [String: FieldValue] { all().fields }
    /// The encrypted values, decoded.
    var encrypted: [String: FieldValue] { all().encrypted }

    /// The value stored under `key` in one section, decoding only it (or taking it
    /// from the cache when the section was already decoded).
    func value(_ key: String, encrypted: Bool) -> FieldValue? {
        let cached = decoded.withLock { values -> FieldValue?? in
            guard let values else { return nil }
            return .some(encrypted ? values.encrypted[key] : values.fields[key])
        }
        if let cached { return cached }
        // A dictionary matches keys by Swift string equality (canonical equivalence),
        // the walk below by bytes: they agree for ASCII keys, as valid keys are; any
        // other key is answered the dictionary's way.
        guard UTF8Order.isASCII(key) else {
            return encrypted ? self.encrypted[key] : fields[key]
        }
        return bytes.withUnsafeBytes { buffer -> FieldValue? in
            var reader = BinaryReader(buffer, context: "record values")
            if encrypted { try? reader.seek(to: encryptedOffset) }
            var key = key
            return key.withUTF8 { wanted -> FieldValue? in
                guard let count = try? reader.length(minimumItemSize: 3) else { return nil }
                for _ in 0..<count {
                    guard let name = try? reader.rawSlice(reader.length()) else { return nil }
                    let order = UTF8Order.compare(name, UnsafeRawBufferPointer(wanted))
                    if order == 0 { return try? RecordCodec.readValue(home: home, from: &reader) }
                    // Keys are stored in ascending order: once past it, it is absent.
                    if order > 0 { return nil }
                    guard (try? RecordReader.skipValue(&reader)) != nil else { return nil }
                }
                return nil
            }
        }
    }

    /// Calls `body` with each user field whose key `accept` takes, decoding only those
    /// (in stored order), or reading them from the cache (in dictionary order).
    func forEachField(where accept: (String) -> Bool, _ body: (String, FieldValue) throws -> Void) rethrows {
        if let cached = decoded.withLock({ $0 }) {
            for (key, value) in cached.fields where accept(key) { try body(key, value) }
            return
        }
        var accepted: [(String, FieldValue)] = []
        bytes.withUnsafeBytes { buffer in
            var reader = BinaryReader(buffer, context: "record values")
            do {
                for _ in 0..<(try reader.length(minimumItemSize: 3)) {
                    let key = try reader.string()
                    if accept(key) {
                        accepted.append((key, try RecordCodec.readValue(home: home, from: &reader)))
                    } else {
                        try RecordReader.skipValue(&reader)
                    }
                }
            } catch {
                // Unreachable: init checked these bytes.
            }
        }
        for (key, value) in accepted { try body(key, value) }
    }

    /// Calls `body` with every reference in the user fields (list elements
    /// included), in stored order, decoding only reference values: the rest are
    /// skipped by their tag.
    func forEachReference(_ body: (Reference) throws -> Void) rethrows {
        if let cached = decoded.withLock({ $0 }) {
            for value in cached.fields.values { for reference in value.references { try body(reference) } }
            return
        }
        let referenceTag = FieldValue.ValueType.reference.rawValue
        var found: [Reference] = []
        bytes.withUnsafeBytes { buffer in
            var reader = BinaryReader(buffer, context: "record values")
            do {
                for _ in 0..<(try reader.length(minimumItemSize: 3)) {
                    _ = try reader.rawSlice(reader.length())
                    let start = reader.offset
                    let tag = try reader.u8()
                    guard tag == referenceTag || tag == RecordCodec.listFlag | referenceTag else {
                        try reader.seek(to: start)
                        try RecordReader.skipValue(&reader)
                        continue
                    }
                    try reader.seek(to: start)
                    found += try RecordCodec.readValue(home: home, from: &reader).references
                }
            } catch {
                // Unreachable: init checked these bytes.
            }
        }
        for reference in found { try body(reference) }
    }

    /// The stored keys of one section, in their stored (UTF-8) order.
    func keys(encrypted: Bool) -> [String] {
        bytes.withUnsafeBytes { buffer -> [String] in
            var reader = BinaryReader(buffer, context: "record values")
            var keys: [String] = []
            do {
                if encrypted { try reader.seek(to: encryptedOffset) }
                for _ in 0..<(try reader.length(minimumItemSize: 3)) {
                    keys.append(try reader.string())
                    try RecordReader.skipValue(&reader)
                }
            } catch {
                // Unreachable: init checked these bytes.
            }
            return keys
        }
    }

    /// The values whose key `keep` accepts, in one pass that decodes only those.
    func values(keeping keep: (String) -> Bool) -> (fields: [String: FieldValue], encrypted: [String: FieldValue]) {
        if let cached = decoded.withLock({ $0 }) {
            return (cached.fields.filter { keep($0.key) }, cached.encrypted.filter { keep($0.key) })
        }
        return bytes.withUnsafeBytes { buffer in
            var reader = BinaryReader(buffer, context: "record values")
            var sections: [[String: FieldValue]] = [[:], [:]]
            do {
                for section in 0..<2 {
                    for _ in 0..<(try reader.length(minimumItemSize: 3)) {
                        let key = try reader.string()
                        if keep(key) {
                            sections[section][key] = try RecordCodec.readValue(home: home, from: &reader)
                        } else {
                            try RecordReader.skipValue(&reader)
                        }
                    }
                }
            } catch {
                // Unreachable: init checked these bytes.
            }
            return (sections[0], sections[1])
        }
    }

    private func all() -> (fields: [String: FieldValue], encrypted: [String: FieldValue]) {
        if let cached = decoded.withLock({ $0 }) { return cached }
        let values = bytes.withUnsafeBytes { buffer -> (fields: [String: FieldValue], encrypted: [String: FieldValue]) in
            var reader = BinaryReader(buffer, context: "record values")
            // init checked what readFields checks, so these cannot fail; if they
            // somehow did, an empty section is the answer rather than a trap.
            let fields = (try? RecordCodec.readFields(home: home, from: &reader)) ?? [:]
            var rest = BinaryReader(buffer, context: "record values")
            try? rest.seek(to: encryptedOffset)
            let encrypted = (try? RecordCodec.readFields(home: home, from: &rest)) ?? [:]
            return (fields, encrypted)
        }
        decoded.withLock { $0 = values }
        return values
    }

    /// Walks one section as ``RecordCodec/readFields(home:from:)`` reads it,
    /// building nothing.
    private static func checkSection(_ reader: inout BinaryReader, home: ZoneID) throws {
        let count = try reader.length(minimumItemSize: 3)
        var previous: UnsafeRawBufferPointer?
        var keys: [UnsafeRawBufferPointer] = []
        var allASCII = true
        for _ in 0..<count {
            let key = try RecordReader.skipString(&reader, checking: true)
            if let previous, UTF8Order.compare(previous, key) >= 0 {
                throw reader.failure("field keys not in strictly ascending order")
            }
            previous = key
            if allASCII, !BinaryReader.isASCII(key) { allASCII = false }
            keys.append(key)
            try RecordReader.skipValue(&reader, checking: home)
        }
        // Distinct bytes can still be equal Swift strings (canonical equivalence, and
        // an ASCII key can equal a non-ASCII one: K and U+212A). readFields refuses such
        // a pair; so must this check, or the decode after it would lose the section.
        // Only a section with a non-ASCII key can hold one.
        guard !allASCII else { return }
        var seen = Set<String>()
        for key in keys where !seen.insert(String(decoding: key, as: UTF8.self)).inserted {
            throw reader.failure("field key '\(String(decoding: key, as: UTF8.self))' appears twice")
        }
    }
}
