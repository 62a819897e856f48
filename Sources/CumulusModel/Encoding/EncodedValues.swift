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

    /// Values just encoded from `fields` and `encrypted` (``RecordCodec/encodeKeepingValues(_:)``):
    /// the bytes are the encoder's own, so they are not checked again, and the values
    /// are already at hand, so reads never decode.
    init(
        encoded bytes: [UInt8], home: ZoneID, encryptedOffset: Int, fields: [String: FieldValue],
        encrypted: [String: FieldValue]
    ) {
        self.bytes = bytes
        self.home = home
        self.encryptedOffset = encryptedOffset
        self.decoded.withLock { $0 = (fields, encrypted) }
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
        var found: FieldValue?
        var key = key
        key.withUTF8 { wanted in
            walk(encrypted: encrypted) { name, reader in
                let order = UTF8Order.compare(name, UnsafeRawBufferPointer(wanted))
                if order == 0 { found = try RecordCodec.readValue(home: home, from: &reader) }
                // Keys are stored in ascending order: once at or past it, stop.
                if order >= 0 { return false }
                try RecordReader.skipValue(&reader)
                return true
            }
        }
        return found
    }

    /// Calls `body` with each user field whose key `accept` takes, decoding only those
    /// (in stored order), or reading them from the cache (in dictionary order).
    func forEachField(where accept: (String) -> Bool, _ body: (String, FieldValue) throws -> Void) rethrows {
        if let cached = decoded.withLock({ $0 }) {
            for (key, value) in cached.fields where accept(key) { try body(key, value) }
            return
        }
        var accepted: [(String, FieldValue)] = []
        walk(encrypted: false) { name, reader in
            let key = String(decoding: name, as: UTF8.self)
            if accept(key) {
                accepted.append((key, try RecordCodec.readValue(home: home, from: &reader)))
            } else {
                try RecordReader.skipValue(&reader)
            }
            return true
        }
        for (key, value) in accepted { try body(key, value) }
    }

    /// Calls `body` with every reference in the user fields (list elements
    /// included), decoding only reference values: the rest are skipped by their tag.
    func forEachReference(_ body: (Reference) throws -> Void) rethrows {
        if let cached = decoded.withLock({ $0 }) {
            for value in cached.fields.values { for reference in value.references { try body(reference) } }
            return
        }
        let referenceTag = FieldValue.ValueType.reference.rawValue
        var found: [Reference] = []
        walk(encrypted: false) { _, reader in
            let start = reader.offset
            let tag = try reader.u8()
            try reader.seek(to: start)
            if tag == referenceTag || tag == RecordCodec.listFlag | referenceTag {
                found += try RecordCodec.readValue(home: home, from: &reader).references
            } else {
                try RecordReader.skipValue(&reader)
            }
            return true
        }
        for reference in found { try body(reference) }
    }

    /// The stored keys of one section, in their stored (UTF-8) order.
    func keys(encrypted: Bool) -> [String] {
        var keys: [String] = []
        walk(encrypted: encrypted) { name, reader in
            keys.append(String(decoding: name, as: UTF8.self))
            try RecordReader.skipValue(&reader)
            return true
        }
        return keys
    }

    /// The values whose key `keep` accepts, in one pass per section that decodes only those.
    func values(keeping keep: (String) -> Bool) -> (fields: [String: FieldValue], encrypted: [String: FieldValue]) {
        if let cached = decoded.withLock({ $0 }) {
            return (cached.fields.filter { keep($0.key) }, cached.encrypted.filter { keep($0.key) })
        }
        var sections: [[String: FieldValue]] = [[:], [:]]
        for (index, encrypted) in [false, true].enumerated() {
            walk(encrypted: encrypted) { name, reader in
                let key = String(decoding: name, as: UTF8.self)
                if keep(key) {
                    sections[index][key] = try RecordCodec.readValue(home: home, from: &reader)
                } else {
                    try RecordReader.skipValue(&reader)
                }
                return true
            }
        }
        return (sections[0], sections[1])
    }

    /// The one walk over a section's entries: `visit` gets each key's bytes with the
    /// reader at its value, must read or skip that value, and returns whether to go on.
    /// The bytes were checked by init (keys are valid UTF-8, values decode), so no read
    /// here can fail; if one somehow did, the walk stops rather than trap.
    private func walk(encrypted: Bool, _ visit: (UnsafeRawBufferPointer, inout BinaryReader) throws -> Bool) {
        bytes.withUnsafeBytes { buffer in
            var reader = BinaryReader(buffer, context: "record values")
            do {
                if encrypted { try reader.seek(to: encryptedOffset) }
                for _ in 0..<(try reader.length(minimumItemSize: 3)) {
                    guard try visit(try reader.rawSlice(reader.length()), &reader) else { return }
                }
            } catch {
                return
            }
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
        let start = reader.offset
        let count = try reader.length(minimumItemSize: 3)
        var previous: UnsafeRawBufferPointer?
        var allASCII = true
        for _ in 0..<count {
            // The key's UTF-8 is checked here rather than by `skipString(checking:)`,
            // which would scan an ASCII key a second time.
            let key = try RecordReader.skipString(&reader, checking: false)
            if !BinaryReader.isASCII(key) {
                guard String(validating: key, as: UTF8.self) != nil else { throw reader.failure("invalid UTF-8 in string") }
                allASCII = false
            }
            if let previous, UTF8Order.compare(previous, key) >= 0 {
                throw reader.failure("field keys not in strictly ascending order")
            }
            previous = key
            try RecordReader.skipValue(&reader, checking: home)
        }
        // Distinct bytes can still be equal Swift strings (canonical equivalence, and
        // an ASCII key can equal a non-ASCII one: K and U+212A). readFields refuses such
        // a pair; so must this check, or the decode after it would lose the section.
        // Only a section with a non-ASCII key can hold one, so only such a section
        // (rare) is read again, by readFields itself, to find it.
        guard !allASCII else { return }
        let end = reader.offset
        try reader.seek(to: start)
        _ = try RecordCodec.readFields(home: home, from: &reader)
        try reader.seek(to: end)
    }
}
