/// A streaming JSON writer: tokens appended to one growing byte buffer, with no tree
/// and no `Encoder` in between.
///
/// It writes what `JSONEncoder` with `[.sortedKeys, .withoutEscapingSlashes]` writes
/// for the same values, byte for byte (``JSONValue/serialized(prettyPrinted:)`` is the
/// reference the tests hold it to): integers in decimal, a double as its shortest
/// round-trip form without a trailing `.0`, strings escaping only `"`, `\` and the
/// control characters (`\b \t \n \f \r`, else `\u00xx`), and an object's members in
/// ascending order of their keys' UTF-8 bytes (as `JSONEncoder` sorts them, which is
/// not Swift's `String` order) when it writes a ``JSONValue``. Callers that stream an object
/// themselves write its members in that order (``members(_:)``), so a record written
/// from stored bytes is the same JSON the tree gave.
///
/// Separators are its business: a value or key written after another in the same
/// container is preceded by a comma. It does not check that keys and values
/// alternate; the writers built on it (``RecordJSONWriter``) are the checks.
///
/// Storage: one buffer of its own, grown by doubling, written through a pointer: an
/// answer of a hundred records is some ten thousand small writes, which appending to
/// an `Array` made a uniqueness and capacity check each. The writer is `~Copyable` so
/// that the buffer has one owner, freed when the writer ends; ``bytes`` copies it out.
public struct JSONWriter: ~Copyable {
    private var base: UnsafeMutableRawPointer
    private var used = 0
    private var capacity: Int
    /// Whether the next key or value follows another in its container.
    private var needsComma = false

    /// An empty writer whose buffer first holds `capacity` bytes.
    public init(capacity: Int = 1024) {
        self.capacity = max(capacity, 64)
        base = UnsafeMutableRawPointer.allocate(byteCount: self.capacity, alignment: 1)
    }

    deinit { base.deallocate() }

    /// The JSON written so far, copied out.
    public var bytes: [UInt8] { Array(UnsafeRawBufferPointer(start: base, count: used)) }

    /// Calls `body` with the JSON written so far, without copying it.
    public func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: base, count: used))
    }

    /// Bytes written so far: a mark to ``rollBack(to:needsComma:)`` to.
    public var count: Int { used }

    /// Forgets what was written after `mark` (a ``count`` taken before), as if it never
    /// was: a value that failed part-way is not left half written.
    public mutating func rollBack(to mark: Int, needsComma: Bool) {
        used = min(used, max(0, mark))
        self.needsComma = needsComma
    }

    /// Whether the next key or value will be preceded by a comma: with ``count``, what
    /// a caller saves to roll back to.
    public var separatorPending: Bool { needsComma }

    @inline(__always) private mutating func separate() {
        if needsComma { put(UInt8(ascii: ",")) }
    }

    /// Makes room for `extra` more bytes.
    @inline(__always) private mutating func reserve(_ extra: Int) {
        if used + extra > capacity { grow(extra) }
    }

    private mutating func grow(_ extra: Int) {
        let newCapacity = max(capacity * 2, used + extra)
        let grown = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 1)
        grown.copyMemory(from: base, byteCount: used)
        base.deallocate()
        base = grown
        capacity = newCapacity
    }

    @inline(__always) private mutating func put(_ byte: UInt8) {
        reserve(1)
        base.storeBytes(of: byte, toByteOffset: used, as: UInt8.self)
        used += 1
    }

    /// Appends `raw` with one copy. Most pieces of an answer are a few bytes (a key,
    /// a name, a number's digits): up to 16 are copied with two overlapping loads and
    /// stores in place, where a call to `memmove` each was a tenth of a record's time.
    @inline(__always) private mutating func append(_ raw: UnsafeRawBufferPointer) {
        guard let source = raw.baseAddress else { return }
        let count = raw.count
        reserve(count)
        let target = base + used
        switch count {
        case 8...16:
            let head = source.loadUnaligned(as: UInt64.self)
            let tail = source.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
            target.storeBytes(of: head, as: UInt64.self)
            target.storeBytes(of: tail, toByteOffset: count - 8, as: UInt64.self)
        case 4..<8:
            let head = source.loadUnaligned(as: UInt32.self)
            let tail = source.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)
            target.storeBytes(of: head, as: UInt32.self)
            target.storeBytes(of: tail, toByteOffset: count - 4, as: UInt32.self)
        case 1..<4:
            for index in 0..<count {
                target.storeBytes(of: source.load(fromByteOffset: index, as: UInt8.self), toByteOffset: index, as: UInt8.self)
            }
        case 0:
            return
        default:
            target.copyMemory(from: source, byteCount: count)
        }
        used += count
    }

    // MARK: Containers

    /// `{`
    public mutating func beginObject() {
        separate()
        put(UInt8(ascii: "{"))
        needsComma = false
    }

    /// `}`
    public mutating func endObject() {
        put(UInt8(ascii: "}"))
        needsComma = true
    }

    /// `[`
    public mutating func beginArray() {
        separate()
        put(UInt8(ascii: "["))
        needsComma = false
    }

    /// `]`
    public mutating func endArray() {
        put(UInt8(ascii: "]"))
        needsComma = true
    }

    /// A member's key and its colon: `"key":`. `key` is written as given, so it must
    /// need no escaping (every key of CloudKit's answers is a plain identifier).
    public mutating func key(_ key: StaticString) {
        separate()
        put(UInt8(ascii: "\""))
        key.withUTF8Buffer { append(UnsafeRawBufferPointer($0)) }
        put(UInt8(ascii: "\""))
        put(UInt8(ascii: ":"))
        needsComma = false
    }

    /// A member's key from a string, escaped as a string value is.
    public mutating func key(_ key: String) {
        string(key)
        put(UInt8(ascii: ":"))
        needsComma = false
    }

    /// A member's key from UTF-8 bytes the caller has checked are valid.
    public mutating func key(utf8 key: UnsafeRawBufferPointer) {
        string(utf8: key)
        put(UInt8(ascii: ":"))
        needsComma = false
    }

    // MARK: Scalars

    /// `null`
    public mutating func null() {
        raw("null")
    }

    /// `true` or `false`
    public mutating func bool(_ value: Bool) {
        raw(value ? "true" : "false")
    }

    /// Text written as it is, as one value: a literal the caller knows is JSON.
    public mutating func raw(_ literal: StaticString) {
        separate()
        literal.withUTF8Buffer { append(UnsafeRawBufferPointer($0)) }
        needsComma = true
    }

    /// An integer in decimal.
    public mutating func int(_ value: Int64) {
        separate()
        appendDecimal(value)
        needsComma = true
    }

    /// A double, as `JSONEncoder` writes it: Swift's shortest round-trip form
    /// (`description`) less a trailing `.0`. A non-finite double has no JSON form;
    /// stored doubles are checked finite before they get here, and one that is not is
    /// written `null` rather than as invalid JSON.
    public mutating func double(_ value: Double) {
        guard value.isFinite else { return null() }
        separate()
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        text.withUTF8 { append(UnsafeRawBufferPointer($0)) }
        needsComma = true
    }

    /// A string value, escaped.
    public mutating func string(_ value: String) {
        var text = value
        text.withUTF8 { string(utf8: UnsafeRawBufferPointer($0)) }
    }

    /// A string value from UTF-8 bytes the caller has checked are valid, escaped.
    public mutating func string(utf8 value: UnsafeRawBufferPointer) {
        _ = string(value, checking: false)
    }

    /// A string value from bytes not checked yet: checked to be UTF-8 as they are
    /// scanned for escapes, one pass where a check and a write were two. Returns
    /// `false` when they are not UTF-8, leaving part of the string written, for the
    /// caller to roll back (``rollBack(to:needsComma:)``).
    public mutating func string(checkingUTF8 value: UnsafeRawBufferPointer) -> Bool {
        string(value, checking: true)
    }

    /// A member's key from bytes not checked yet, as ``string(checkingUTF8:)``.
    public mutating func key(checkingUTF8 key: UnsafeRawBufferPointer) -> Bool {
        guard string(key, checking: true) else { return false }
        put(UInt8(ascii: ":"))
        needsComma = false
        return true
    }

    private mutating func string(_ value: UnsafeRawBufferPointer, checking: Bool) -> Bool {
        separate()
        reserve(value.count + 2)
        put(UInt8(ascii: "\""))
        // Nearly every string needs no escape and is ASCII: tested a word at a time
        // and copied whole.
        if Self.isPlain(value, nonASCII: checking) {
            append(value)
            put(UInt8(ascii: "\""))
            needsComma = true
            return true
        }
        // Otherwise bytes are looked at one by one only in a word that holds one
        // needing an escape (or, before the first is checked, a non-ASCII one) and in
        // the last few.
        var unchecked = checking
        var index = 0
        var runStart = 0
        let count = value.count
        while true {
            index = Self.firstSpecial(in: value, from: index, nonASCII: unchecked)
            guard index < count else { break }
            let end = min(index + 8, count)
            while index < end {
                let byte = value[index]
                if byte >= 0x80 {
                    // Every byte before this one is ASCII, so a character starts here:
                    // the rest is checked once, and then only escapes are looked for.
                    if unchecked {
                        guard BinaryReader.isWellFormedUTF8(UnsafeRawBufferPointer(rebasing: value[index...]))
                        else { return false }
                        unchecked = false
                    }
                } else if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                    if runStart < index { append(UnsafeRawBufferPointer(rebasing: value[runStart..<index])) }
                    appendEscape(byte)
                    runStart = index + 1
                }
                index += 1
            }
        }
        if runStart < count { append(UnsafeRawBufferPointer(rebasing: value[runStart...])) }
        put(UInt8(ascii: "\""))
        needsComma = true
        return true
    }

    /// Whether no byte of `value` needs an escape (nor, with `nonASCII`, is 0x80 or
    /// above): whole words, the last one overlapping the one before, and a string
    /// shorter than a word padded with spaces, so no byte is looked at alone.
    @inline(__always) private static func isPlain(_ value: UnsafeRawBufferPointer, nonASCII: Bool) -> Bool {
        let count = value.count
        guard let start = value.baseAddress else { return true }
        if count >= 8 {
            let wholeWords = count & ~7
            guard firstSpecial(in: value, from: 0, nonASCII: nonASCII) == wholeWords else { return false }
            return wholeWords == count
                || !isSpecial(start.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self), nonASCII: nonASCII)
        }
        var word: UInt64 = 0x2020_2020_2020_2020
        withUnsafeMutableBytes(of: &word) { padded in
            for index in 0..<count { padded[index] = start.load(fromByteOffset: index, as: UInt8.self) }
        }
        return !isSpecial(word, nonASCII: nonASCII)
    }

    /// Whether a byte of `word` is below 0x20, a quote or a backslash (or, with
    /// `nonASCII`, 0x80 or above). SWAR: the high bit of a byte's lane is set where
    /// it is; a borrow can only add false hits above a true one.
    @inline(__always) private static func isSpecial(_ word: UInt64, nonASCII: Bool) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let control = (word &- ones &* 0x20) & ~word & highs
        let quote = word ^ (ones &* 0x22)
        let backslash = word ^ (ones &* 0x5C)
        let special = control | ((quote &- ones) & ~quote & highs) | ((backslash &- ones) & ~backslash & highs)
        return special | (nonASCII ? word & highs : 0) != 0
    }

    /// Where, from `start`, the first eight-byte word holding a byte that needs an
    /// escape (below 0x20, a quote or a backslash) or, with `nonASCII`, one of 0x80 or
    /// above begins; or where the last whole word ends when none does. SWAR tests: a
    /// word's bytes are compared at once.
    @inline(__always) private static func firstSpecial(in value: UnsafeRawBufferPointer, from start: Int, nonASCII: Bool) -> Int {
        var index = start
        while index + 8 <= value.count {
            if isSpecial(value.loadUnaligned(fromByteOffset: index, as: UInt64.self), nonASCII: nonASCII) { return index }
            index += 8
        }
        return index
    }

    /// The decimal text of an integer as a string value (`"42"`): INT64 values of an
    /// answer for a client that asked for numbers as strings.
    public mutating func intString(_ value: Int64) {
        separate()
        put(UInt8(ascii: "\""))
        appendDecimal(value)
        put(UInt8(ascii: "\""))
        needsComma = true
    }

    /// Bytes as a base64 string value (standard alphabet, padded), as
    /// `Data.base64EncodedString()` writes them.
    public mutating func base64(_ data: UnsafeRawBufferPointer) {
        separate()
        put(UInt8(ascii: "\""))
        let alphabet: StaticString = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
        alphabet.withUTF8Buffer { table in
            var index = 0
            while index + 3 <= data.count {
                let chunk = UInt32(data[index]) << 16 | UInt32(data[index + 1]) << 8 | UInt32(data[index + 2])
                put(table[Int(chunk >> 18 & 63)])
                put(table[Int(chunk >> 12 & 63)])
                put(table[Int(chunk >> 6 & 63)])
                put(table[Int(chunk & 63)])
                index += 3
            }
            let left = data.count - index
            if left > 0 {
                let chunk = UInt32(data[index]) << 16 | (left == 2 ? UInt32(data[index + 1]) << 8 : 0)
                put(table[Int(chunk >> 18 & 63)])
                put(table[Int(chunk >> 12 & 63)])
                put(left == 2 ? table[Int(chunk >> 6 & 63)] : UInt8(ascii: "="))
                put(UInt8(ascii: "="))
            }
        }
        put(UInt8(ascii: "\""))
        needsComma = true
    }

    // MARK: Trees

    /// A whole value, objects' members in ascending key order.
    public mutating func value(_ value: JSONValue) {
        switch value {
        case .null: null()
        case .bool(let flag): bool(flag)
        case .int(let number): int(number)
        case .double(let number): double(number)
        case .string(let text): string(text)
        case .array(let elements):
            beginArray()
            for element in elements { self.value(element) }
            endArray()
        case .object(let members):
            beginObject()
            self.members(members)
            endObject()
        }
    }

    /// A fixed piece of JSON that leads up to a value (`{"type":"INT64","value":`, or
    /// `,"userRecordName":` inside an object being written), copied as it is: no comma
    /// before it, none before the value that follows. The caller knows the piece is
    /// where it belongs; the record writer's fixed layouts are written this way, one
    /// copy instead of a call per brace, key and colon.
    public mutating func fragment(_ json: UnsafeRawBufferPointer) {
        append(json)
        needsComma = false
    }

    /// ``fragment(_:)`` of a literal.
    public mutating func fragment(_ literal: StaticString) {
        literal.withUTF8Buffer { append(UnsafeRawBufferPointer($0)) }
        needsComma = false
    }

    /// `members` written into the object open now, in ascending key order, as
    /// ``value(_:)`` writes an object's: the members an answer has besides its records.
    public mutating func members(_ members: [String: JSONValue]) {
        for (key, value) in members.sorted(by: { UTF8Order.precedes($0.key, $1.key) }) {
            self.key(key)
            self.value(value)
        }
    }

    // MARK: Pieces

    private mutating func appendDecimal(_ value: Int64) {
        if value < 0 { put(UInt8(ascii: "-")) }
        // The magnitude as unsigned, so Int64.min has one too; its digits are counted,
        // then written from the last one back, straight into the buffer, two a division
        // (a timestamp's thirteen took thirteen, and a copy out of a scratch buffer).
        var magnitude = value.magnitude
        var count = 1
        var power: UInt64 = 10
        while count < 20, magnitude >= power {
            count += 1
            if count < 20 { power &*= 10 }
        }
        reserve(count)
        let target = base + used
        var end = count
        Self.digitPairs.withUTF8Buffer { pairs in
            while magnitude >= 100 {
                let pair = Int(magnitude % 100) &* 2
                magnitude /= 100
                end -= 2
                target.storeBytes(of: pairs[pair], toByteOffset: end, as: UInt8.self)
                target.storeBytes(of: pairs[pair + 1], toByteOffset: end + 1, as: UInt8.self)
            }
            if magnitude >= 10 {
                let pair = Int(magnitude) &* 2
                target.storeBytes(of: pairs[pair], toByteOffset: 0, as: UInt8.self)
                target.storeBytes(of: pairs[pair + 1], toByteOffset: 1, as: UInt8.self)
            } else {
                target.storeBytes(of: UInt8(ascii: "0") + UInt8(magnitude), toByteOffset: 0, as: UInt8.self)
            }
        }
        used += count
    }

    /// "00" to "99", each pair at twice its value.
    private static let digitPairs: StaticString = """
        00010203040506070809101112131415161718192021222324252627282930313233343536373839\
        40414243444546474849505152535455565758596061626364656667686970717273747576777879\
        8081828384858687888990919293949596979899
        """

    private mutating func appendEscape(_ byte: UInt8) {
        put(UInt8(ascii: "\\"))
        switch byte {
        case UInt8(ascii: "\""): put(UInt8(ascii: "\""))
        case UInt8(ascii: "\\"): put(UInt8(ascii: "\\"))
        case 0x08: put(UInt8(ascii: "b"))
        case 0x09: put(UInt8(ascii: "t"))
        case 0x0A: put(UInt8(ascii: "n"))
        case 0x0C: put(UInt8(ascii: "f"))
        case 0x0D: put(UInt8(ascii: "r"))
        default:
            let hex: StaticString = "0123456789abcdef"
            hex.withUTF8Buffer { digits in
                put(UInt8(ascii: "u"))
                put(UInt8(ascii: "0"))
                put(UInt8(ascii: "0"))
                put(digits[Int(byte >> 4)])
                put(digits[Int(byte & 15)])
            }
        }
    }
}
