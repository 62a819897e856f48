/// Reads the primitives written by ``BinaryWriter`` from untrusted bytes.
///
/// Every read checks bounds first and every length is checked against the bytes
/// that remain before anything is allocated, so hostile input yields a
/// `CumulusError` rather than a trap or a huge allocation. Non-canonical forms
/// (over-long varints, −0.0) are refused, so whatever decodes re-encodes to the
/// same bytes.
///
/// The reader borrows its buffer: it is valid only while the buffer is (inside
/// `withUnsafeBytes`, or inside the LMDB transaction that returned it).
///
/// The primitive reads are `@inlinable`: they run for every byte of every commit
/// the log decodes, and as opaque cross-module calls they cost more than the work
/// they do (`Docs/PERFORMANCE.md`).
public struct BinaryReader {
    @usableFromInline let buffer: UnsafeRawBufferPointer
    /// Offset of the next byte to read.
    public private(set) var offset: Int {
        // The stored property stays private to writes from outside; the inlinable
        // reads below advance it through `_offset`.
        get { _offset }
        set { _offset = newValue }
    }
    @usableFromInline var _offset: Int
    /// What is being decoded, for error messages ("record", "commit", …).
    public let context: String

    /// A reader over `buffer`, starting at its first byte.
    public init(_ buffer: UnsafeRawBufferPointer, context: String = "data") {
        self.buffer = buffer
        self._offset = 0
        self.context = context
    }

    /// Moves to `offset` in the buffer, forward or back: for readers that return to
    /// a place they measured on an earlier pass.
    public mutating func seek(to offset: Int) throws {
        guard offset >= 0, offset <= buffer.count else { throw failure("offset \(offset) is outside the data") }
        _offset = offset
    }

    /// Bytes not yet read.
    @inlinable public var remaining: Int { buffer.count - _offset }

    /// Whether every byte has been read.
    @inlinable public var isAtEnd: Bool { _offset == buffer.count }

    /// An error located at the current offset.
    public func failure(_ reason: String) -> CumulusError {
        CumulusError(.invalidArguments, "malformed \(context) at byte \(offset): \(reason)")
    }

    /// The error for a string here that is not UTF-8.
    public func notUTF8() -> CumulusError { failure("invalid UTF-8 in string") }

    /// The error for reading past the end; out of line, so the inlined reads stay small.
    @usableFromInline func endOfData() -> CumulusError {
        failure("unexpected end of data")
    }

    /// Throws unless every byte was consumed: trailing garbage is corruption too.
    public func expectEnd() throws {
        if !isAtEnd { throw failure("\(remaining) unexpected trailing bytes") }
    }

    /// One byte.
    @inlinable public mutating func u8() throws -> UInt8 {
        guard _offset < buffer.count else { throw endOfData() }
        let byte = buffer[_offset]
        _offset += 1
        return byte
    }

    /// Four bytes, big-endian.
    @inlinable public mutating func u32() throws -> UInt32 {
        guard remaining >= 4 else { throw endOfData() }
        let value = UInt32(bigEndian: buffer.loadUnaligned(fromByteOffset: _offset, as: UInt32.self))
        _offset += 4
        return value
    }

    /// Eight bytes, big-endian.
    @inlinable public mutating func u64() throws -> UInt64 {
        guard remaining >= 8 else { throw endOfData() }
        let value = UInt64(bigEndian: buffer.loadUnaligned(fromByteOffset: _offset, as: UInt64.self))
        _offset += 8
        return value
    }

    /// Minimal unsigned LEB128.
    @inlinable public mutating func varint() throws -> UInt64 {
        // One-byte varints (counts, lengths, small numbers) are by far the most common.
        if _offset < buffer.count {
            let first = buffer[_offset]
            if first & 0x80 == 0 {
                _offset += 1
                return UInt64(first)
            }
        }
        return try multiByteVarint()
    }

    @usableFromInline mutating func multiByteVarint() throws -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        for index in 0..<10 {
            let byte = try u8()
            if index == 9 && byte > 1 { throw failure("varint overflows 64 bits") }
            result |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 {
                if byte == 0 && index > 0 { throw failure("over-long varint") }
                return result
            }
            shift += 7
        }
        throw failure("varint longer than 10 bytes")
    }

    /// A count or length, which must fit in what remains (each item takes at least
    /// `minimumItemSize` bytes), so a forged count cannot cause a huge allocation.
    @inlinable public mutating func length(minimumItemSize: Int = 1) throws -> Int {
        let value = try varint()
        // Most lengths count bytes: no integer division for them.
        guard value <= UInt64(minimumItemSize <= 1 ? remaining : remaining / minimumItemSize) else {
            throw lengthFailure(value)
        }
        return Int(value)
    }

    @usableFromInline func lengthFailure(_ value: UInt64) -> CumulusError {
        failure("length \(value) exceeds the \(remaining) bytes left")
    }

    /// A zig-zag signed integer.
    @inlinable public mutating func zigzag() throws -> Int64 {
        let raw = try varint()
        return Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1)
    }

    /// A double; refuses −0.0, which the writer never emits.
    public mutating func double() throws -> Double {
        let bits = try u64()
        if bits == (0x8000_0000_0000_0000 as UInt64) { throw failure("non-canonical negative zero") }
        return Double(bitPattern: bits)
    }

    /// `count` raw bytes.
    public mutating func raw(_ count: Int) throws -> [UInt8] {
        Array(try rawSlice(count))
    }

    /// `count` raw bytes without copying; valid as long as the underlying buffer is.
    @inlinable public mutating func rawSlice(_ count: Int) throws -> UnsafeRawBufferPointer {
        guard count >= 0, count <= remaining else { throw endOfData() }
        let slice = UnsafeRawBufferPointer(rebasing: buffer[_offset..<_offset + count])
        _offset += count
        return slice
    }

    /// Length-prefixed raw bytes.
    public mutating func blob() throws -> [UInt8] {
        try raw(length())
    }

    /// Length-prefixed UTF-8; invalid UTF-8 is an error.
    public mutating func string() throws -> String {
        try stringAndBytes().string
    }

    /// Length-prefixed UTF-8 and the bytes it was read from (valid as long as the
    /// buffer is), for callers that must also compare the raw bytes (key order).
    public mutating func stringAndBytes() throws -> (string: String, bytes: UnsafeRawBufferPointer) {
        let slice = try rawSlice(length())
        guard let text = Self.decodeUTF8(slice) else { throw notUTF8() }
        return (text, slice)
    }

    /// A length-prefixed string as ``string()`` reads it, but `known` itself when the
    /// bytes are exactly its UTF-8 (a valid string, so nothing more to check): a decode
    /// that expects a value saves building an equal one.
    mutating func string(reusing known: String?) throws -> String {
        let bytes = try rawSlice(length())
        if var known {
            let same = known.withUTF8 { UTF8Order.compare(UnsafeRawBufferPointer($0), bytes) == 0 }
            if same { return known }
        }
        guard let text = Self.decodeUTF8(bytes) else { throw notUTF8() }
        return text
    }

    /// `bytes` as a `String` if they are valid UTF-8.
    ///
    /// Nearly every string in the formats is ASCII (names, identifiers, keys), and
    /// `String(validating:as:)` costs about a thousand instructions per call even for
    /// those (unspecialized generic metadata lookups in the standard library). ASCII
    /// is valid UTF-8 that `String(decoding:as:)` copies unchanged, so only the rest
    /// goes through full validation.
    static func decodeUTF8(_ bytes: UnsafeRawBufferPointer) -> String? {
        if isASCII(bytes) { return String(decoding: bytes, as: UTF8.self) }
        return String(validating: bytes, as: UTF8.self)
    }

    /// Whether `bytes` are valid UTF-8, without building a `String` for ASCII: for a
    /// reader that keeps a string in its bytes until it is asked for.
    public static func isValidUTF8(_ bytes: UnsafeRawBufferPointer) -> Bool {
        isASCII(bytes) || isWellFormedUTF8(bytes)
    }

    /// Whether `bytes` are well-formed UTF-8 as the Unicode Standard defines it
    /// (table 3-7: no overlong forms, no surrogates, nothing above U+10FFFF), what
    /// `String(validating:as:)` accepts, without building the string: that built one
    /// on the heap for every non-ASCII value a read checked.
    public static func isWellFormedUTF8(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let count = bytes.count
        var index = 0
        @inline(__always) func continuation(_ at: Int) -> Bool { at < count && bytes[at] & 0xC0 == 0x80 }
        @inline(__always) func second(_ range: ClosedRange<UInt8>) -> Bool { index + 1 < count && range.contains(bytes[index + 1]) }
        while index < count {
            // ASCII runs a word at a time.
            if index + 8 <= count, bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
                index += 8
                continue
            }
            let lead = bytes[index]
            switch lead {
            case 0x00...0x7F:
                index += 1
            case 0xC2...0xDF:
                guard continuation(index + 1) else { return false }
                index += 2
            case 0xE0:
                guard second(0xA0...0xBF), continuation(index + 2) else { return false }
                index += 3
            case 0xE1...0xEC, 0xEE...0xEF:
                guard continuation(index + 1), continuation(index + 2) else { return false }
                index += 3
            case 0xED:
                guard second(0x80...0x9F), continuation(index + 2) else { return false }
                index += 3
            case 0xF0:
                guard second(0x90...0xBF), continuation(index + 2), continuation(index + 3) else { return false }
                index += 4
            case 0xF1...0xF3:
                guard continuation(index + 1), continuation(index + 2), continuation(index + 3) else { return false }
                index += 4
            case 0xF4:
                guard second(0x80...0x8F), continuation(index + 2), continuation(index + 3) else { return false }
                index += 4
            default:
                return false
            }
        }
        return true
    }

    /// Whether every byte is below 0x80, checked eight bytes at a time, the tail in
    /// at most three reads (field keys and short values are mostly tail: a byte loop
    /// there was most of this function in a read's profile).
    static func isASCII(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        let count = bytes.count
        var accumulated: UInt64 = 0
        while index + 8 <= count {
            accumulated |= bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            index += 8
        }
        if index + 4 <= count {
            accumulated |= UInt64(bytes.loadUnaligned(fromByteOffset: index, as: UInt32.self))
            index += 4
        }
        if index + 2 <= count {
            accumulated |= UInt64(bytes.loadUnaligned(fromByteOffset: index, as: UInt16.self))
            index += 2
        }
        if index < count { accumulated |= UInt64(bytes[index]) }
        // Each byte's high bit sits under a 0x80 of the mask whichever width read it.
        return accumulated & 0x8080_8080_8080_8080 == 0
    }
}
