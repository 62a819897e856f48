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
/// **Checked once, up front or as read.** Values are checked with every check a full
/// decode makes (bounds, tags, key order, reference modes and actions, finite
/// doubles, no typed empty list) in one of two ways:
/// - ``init(checking:home:)`` walks every value first, so the decoders below cannot
///   meet bytes they reject (a commit's events, whose records the views then index);
/// - ``init(reading:home:)`` checks nothing up front: each read checks what it walks
///   and decodes, as SQLite checks a column when it is read (fetches, queries and
///   change feeds, whose values are mostly never read, or read once to be written
///   out). A read that meets malformed bytes answers as if the section were empty
///   and keeps the error in ``failure``, which ``checkAll()`` reports; encoding such
///   values throws it, so they are never written anywhere.
/// The accessors stay non-throwing because a record's accessors do.
///
/// **Shared cache.** The first read of every value decodes the section once and
/// keeps it, so a caller that touches `fields` repeatedly does not decode repeatedly;
/// copies of a record share the cache, which holds what the immutable bytes decode to.
final class EncodedValues: Sendable {
    /// The two sections, as stored.
    let bytes: [UInt8]
    /// The record's zone: references in it are stored without their zone.
    let home: ZoneID
    /// Whether every value was checked when the bytes were taken; if not, each read
    /// checks what it walks.
    let checked: Bool
    /// What reads have learnt about the bytes.
    private let state: Mutex<State>

    /// The decoded values, where the encrypted section starts, and what was wrong.
    private struct State: Sendable {
        /// Both sections decoded, once asked for (both empty after a failure).
        var decoded: (fields: [String: FieldValue], encrypted: [String: FieldValue])?
        /// Where the encrypted section's count starts in `bytes`, once known.
        var encryptedOffset: Int?
        /// The first malformation a read met.
        var failure: CumulusError?
        /// The user fields holding references, and those holding assets, once asked
        /// for (``typedFields()``).
        var typed: TypedFields?
    }

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
        self.checked = true
        self.state = Mutex(State(encryptedOffset: encryptedOffset))
    }

    /// Copies `sections`, the two sections that end a stored record, checking nothing
    /// yet: each read checks what it walks and decodes (see the type's notes).
    init(reading sections: UnsafeRawBufferPointer, home: ZoneID) {
        self.bytes = Array(sections)
        self.home = home
        self.checked = false
        self.state = Mutex(State())
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
        self.checked = true
        self.state = Mutex(State(decoded: (fields, encrypted), encryptedOffset: encryptedOffset))
    }

    /// The first malformation a read of these bytes met, or `nil` (always `nil` for
    /// checked bytes).
    var failure: CumulusError? { checked ? nil : state.withLock { $0.failure } }

    /// Decodes every value (kept for later reads) and throws the first malformation,
    /// if any: for a caller about to hand the values on.
    func checkAll() throws {
        guard !checked else { return }
        _ = all()
        if let failure { throw failure }
    }

    /// The decoded sections, if a read already decoded them.
    private var cached: (fields: [String: FieldValue], encrypted: [String: FieldValue])? {
        state.withLock { $0.decoded }
    }

    /// The user fields, decoded.
    var fields: [String: FieldValue] { all().fields }
    /// The encrypted values, decoded.
    var encrypted: [String: FieldValue] { all().encrypted }

    /// The value stored under `key` in one section, decoding only it (or taking it
    /// from the cache when the section was already decoded).
    func value(_ key: String, encrypted: Bool) -> FieldValue? {
        if let cached { return encrypted ? cached.encrypted[key] : cached.fields[key] }
        // A dictionary matches keys by Swift string equality (canonical equivalence),
        // the walk below by bytes: they agree for ASCII keys, as valid keys are; any
        // other key is answered the dictionary's way.
        guard UTF8Order.isASCII(key) else {
            return encrypted ? self.encrypted[key] : fields[key]
        }
        var found: FieldValue?
        var key = key
        let walked = key.withUTF8 { wanted in
            walk(encrypted: encrypted) { name, reader in
                let order = UTF8Order.compare(name, UnsafeRawBufferPointer(wanted))
                if order == 0 { found = try RecordCodec.readValue(home: home, from: &reader) }
                // Keys are stored in ascending order: once at or past it, stop.
                if order >= 0 { return false }
                try RecordReader.skipValue(&reader)
                return true
            }
        }
        switch walked {
        case .done: return found
        case .failed: return nil
        case .needsFullDecode: return encrypted ? all().encrypted[key] : all().fields[key]
        }
    }

    /// Calls `body` with each user field whose key `accept` takes, decoding only those
    /// (in stored order), or reading them from the cache (in dictionary order).
    func forEachField(where accept: (String) -> Bool, _ body: (String, FieldValue) throws -> Void) rethrows {
        if cached == nil {
            var accepted: [(String, FieldValue)] = []
            let walked = walk(encrypted: false) { name, reader in
                let key = String(decoding: name, as: UTF8.self)
                if accept(key) {
                    accepted.append((key, try RecordCodec.readValue(home: home, from: &reader)))
                } else {
                    try RecordReader.skipValue(&reader)
                }
                return true
            }
            switch walked {
            case .done:
                for (key, value) in accepted { try body(key, value) }
                return
            case .failed: return
            case .needsFullDecode: break
            }
        }
        for (key, value) in all().fields where accept(key) { try body(key, value) }
    }

    /// Calls `body` with the UTF-8 bytes of every string (list elements included) in
    /// the user fields whose key `accept` takes, without building a `String` of them:
    /// what the token index reads of every saved and deleted record. The bytes are
    /// valid UTF-8 (unchecked bytes are checked as read) and valid only during `body`.
    /// As ``forEachField(where:_:)``, malformed values yield nothing at all.
    func forEachString(where accept: (String) -> Bool, _ body: (UnsafeRawBufferPointer) -> Void) {
        if cached == nil {
            let stringTag = FieldValue.ValueType.string.rawValue
            var ranges: [Range<Int>] = []
            let walked = walk(encrypted: false) { name, reader in
                guard accept(String(decoding: name, as: UTF8.self)) else {
                    try RecordReader.skipValue(&reader)
                    return true
                }
                let start = reader.offset
                let tag = try reader.u8()
                guard tag == stringTag || tag == RecordCodec.listFlag | stringTag else {
                    // Not a string: checked as a full read of the field would check it.
                    try reader.seek(to: start)
                    _ = try RecordCodec.readValue(home: home, from: &reader)
                    return true
                }
                let count = tag == stringTag ? 1 : try reader.length()
                guard count > 0 else { throw reader.failure("empty list written with an element type") }
                for _ in 0..<count {
                    let length = try reader.length()
                    let offset = reader.offset
                    let text = try reader.rawSlice(length)
                    if !checked, !BinaryReader.isValidUTF8(text) {
                        throw reader.notUTF8()
                    }
                    ranges.append(offset..<offset + length)
                }
                return true
            }
            switch walked {
            case .done:
                bytes.withUnsafeBytes { buffer in
                    for range in ranges { body(UnsafeRawBufferPointer(rebasing: buffer[range])) }
                }
                return
            case .failed: return
            case .needsFullDecode: break
            }
        }
        for (key, value) in all().fields where accept(key) { value.forEachStringUTF8(body) }
    }

    /// User fields with their keys, in stored key order.
    typealias Fields = [(key: String, value: FieldValue)]

    /// The user fields holding references and those holding assets (scalars, or lists
    /// of them).
    struct TypedFields: Sendable {
        var references: Fields = []
        var assets: Fields = []
    }

    /// Calls `body` with every reference in the user fields (list elements included).
    func forEachReference(_ body: (Reference) throws -> Void) rethrows {
        for (_, value) in typedFields().references { try value.forEachReference(body) }
    }

    /// Calls `body` with every asset in the user fields (list elements included).
    func forEachAsset(_ body: (Asset) throws -> Void) rethrows {
        for (_, value) in typedFields().assets { try value.forEachAsset(body) }
    }

    /// The user fields holding references and those holding assets, found together in
    /// one pass and kept: a saved record is asked for them by the planner (its
    /// references three times: checked, ordered, overlaid), the asset checks, the
    /// reference graph and the asset counts, and walking its values for each ask was
    /// about a tenth of the writer's time in a 400-record operation. A malformed
    /// section holds none: once a read found the bytes malformed, every ask answers the
    /// empty section (as every other read of them does), whatever an earlier walk kept.
    func typedFields() -> TypedFields {
        if failure != nil { return TypedFields() }
        if let known = state.withLock({ $0.typed }) { return known }
        guard let found = collectTypedFields() else { return TypedFields() }
        state.withLock { $0.typed = found }
        return found
    }

    /// Finds the typed fields: by a walk that decodes only their values while nothing
    /// is decoded, else from the decoded fields; `nil` if the bytes are malformed (the
    /// failure is kept).
    private func collectTypedFields() -> TypedFields? {
        var found = TypedFields()
        func add(_ key: String, _ value: FieldValue, type: UInt8) {
            if type == FieldValue.ValueType.reference.rawValue { found.references.append((key, value)) }
            if type == FieldValue.ValueType.asset.rawValue { found.assets.append((key, value)) }
        }
        if cached == nil {
            let kept = [FieldValue.ValueType.reference.rawValue, FieldValue.ValueType.asset.rawValue]
            let walked = walk(encrypted: false) { name, reader in
                let start = reader.offset
                let tag = try reader.u8()
                try reader.seek(to: start)
                if let type = kept.first(where: { tag == $0 || tag == RecordCodec.listFlag | $0 }) {
                    add(String(decoding: name, as: UTF8.self), try RecordCodec.readValue(home: home, from: &reader), type: type)
                } else {
                    try RecordReader.skipValue(&reader)
                }
                return true
            }
            switch walked {
            case .done: return found
            case .failed: return nil
            case .needsFullDecode: break
            }
        }
        let values = all()
        if failure != nil { return nil }
        for (key, value) in values.fields {
            if let type = value.elementType { add(key, value, type: type.rawValue) }
        }
        found.references.sort { UTF8Order.compare($0.key, $1.key) < 0 }
        found.assets.sort { UTF8Order.compare($0.key, $1.key) < 0 }
        return found
    }

    /// The stored keys of one section, in their stored (UTF-8) order.
    func keys(encrypted: Bool) -> [String] {
        if cached == nil {
            var keys: [String] = []
            let walked = walk(encrypted: encrypted) { name, reader in
                keys.append(String(decoding: name, as: UTF8.self))
                try RecordReader.skipValue(&reader)
                return true
            }
            switch walked {
            case .done: return keys
            case .failed: return []
            case .needsFullDecode: break
            }
        }
        let values = all()
        return (encrypted ? values.encrypted : values.fields).keys.sorted(by: UTF8Order.precedes)
    }

    /// The values whose key `keep` accepts, in one pass per section that decodes only those.
    func values(keeping keep: (String) -> Bool) -> (fields: [String: FieldValue], encrypted: [String: FieldValue]) {
        if cached == nil {
            var sections: [[String: FieldValue]] = [[:], [:]]
            var walked = Walk.done
            for (index, encrypted) in [false, true].enumerated() where walked == .done {
                walked = walk(encrypted: encrypted) { name, reader in
                    let key = String(decoding: name, as: UTF8.self)
                    if keep(key) {
                        sections[index][key] = try RecordCodec.readValue(home: home, from: &reader)
                    } else {
                        try RecordReader.skipValue(&reader)
                    }
                    return true
                }
            }
            switch walked {
            case .done: return (sections[0], sections[1])
            case .failed: return ([:], [:])
            case .needsFullDecode: break
            }
        }
        let values = all()
        return (values.fields.filter { keep($0.key) }, values.encrypted.filter { keep($0.key) })
    }

    /// How a walk ended.
    private enum Walk {
        /// Every entry visited, or the visitor stopped.
        case done
        /// The bytes are malformed; ``failure`` says how.
        case failed
        /// Unchecked bytes hold a non-ASCII key: only the full decode checks such a
        /// key against the others (two distinct byte strings can be equal Swift
        /// strings), so the caller answers from ``all()`` instead.
        case needsFullDecode
    }

    /// The one walk over a section's entries: `visit` gets each key's bytes with the
    /// reader at its value, must read or skip that value, and returns whether to go on.
    /// On checked bytes no read here can fail. On unchecked bytes the walk checks each
    /// key it passes (ASCII, strictly ascending) and `visit` checks what it decodes;
    /// the skipped values are checked only for their structure, as a `desiredKeys`
    /// read's are.
    private func walk(encrypted: Bool, _ visit: (UnsafeRawBufferPointer, inout BinaryReader) throws -> Bool) -> Walk {
        do {
            let offset = encrypted ? try encryptedOffset() : 0
            return try bytes.withUnsafeBytes { buffer in
                var reader = BinaryReader(buffer, context: "record values")
                try reader.seek(to: offset)
                var previous: UnsafeRawBufferPointer?
                for _ in 0..<(try reader.length(minimumItemSize: 3)) {
                    let key = try reader.rawSlice(reader.length())
                    if !checked {
                        guard BinaryReader.isASCII(key) else { return .needsFullDecode }
                        if let previous, UTF8Order.compare(previous, key) >= 0 {
                            throw reader.failure("field keys not in strictly ascending order")
                        }
                        previous = key
                    }
                    guard try visit(key, &reader) else { return .done }
                }
                return .done
            }
        } catch {
            remember(error)
            return .failed
        }
    }

    /// Where the encrypted section starts: known for checked bytes, found once by
    /// skipping the user fields' structure for unchecked ones.
    private func encryptedOffset() throws -> Int {
        if let known = state.withLock({ $0.encryptedOffset }) { return known }
        let offset = try bytes.withUnsafeBytes { buffer in
            var reader = BinaryReader(buffer, context: "record values")
            for _ in 0..<(try reader.length(minimumItemSize: 3)) {
                _ = try reader.rawSlice(reader.length())
                try RecordReader.skipValue(&reader)
            }
            return reader.offset
        }
        state.withLock { $0.encryptedOffset = offset }
        return offset
    }

    /// Keeps the first malformation met, for ``failure``.
    private func remember(_ error: any Error) {
        let failure = error as? CumulusError ?? CumulusError(.internalError, "record values: \(error)")
        state.withLock { if $0.failure == nil { $0.failure = failure } }
    }

    /// Both sections decoded (and cached): with every check of a full decode, so on
    /// unchecked bytes this is the complete check. Malformed bytes give two empty
    /// sections and a ``failure``.
    private func all() -> (fields: [String: FieldValue], encrypted: [String: FieldValue]) {
        if let cached { return cached }
        var values: (fields: [String: FieldValue], encrypted: [String: FieldValue]) = ([:], [:])
        do {
            values = try bytes.withUnsafeBytes { buffer in
                var reader = BinaryReader(buffer, context: "record values")
                let fields = try RecordCodec.readFields(home: home, from: &reader)
                let encrypted = try RecordCodec.readFields(home: home, from: &reader)
                try reader.expectEnd()
                return (fields, encrypted)
            }
        } catch {
            remember(error)
        }
        state.withLock { $0.decoded = values }
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
                guard BinaryReader.isWellFormedUTF8(key) else { throw reader.notUTF8() }
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
