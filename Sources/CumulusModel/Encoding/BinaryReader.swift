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
public struct BinaryReader {
    let buffer: UnsafeRawBufferPointer
    /// Offset of the next byte to read.
    public private(set) var offset: Int
    /// What is being decoded, for error messages ("record", "commit", …).
    public let context: String

    /// A reader over `buffer`, starting at its first byte.
    public init(_ buffer: UnsafeRawBufferPointer, context: String = "data") {
        self.buffer = buffer
        self.offset = 0
        self.context = context
    }

    /// Bytes not yet read.
    public var remaining: Int { buffer.count - offset }

    /// Whether every byte has been read.
    public var isAtEnd: Bool { offset == buffer.count }

    /// An error located at the current offset.
    public func failure(_ reason: String) -> CumulusError {
        CumulusError(.invalidArguments, "malformed \(context) at byte \(offset): \(reason)")
    }

    /// Throws unless every byte was consumed: trailing garbage is corruption too.
    public func expectEnd() throws {
        if !isAtEnd { throw failure("\(remaining) unexpected trailing bytes") }
    }

    /// One byte.
    public mutating func u8() throws -> UInt8 {
        guard offset < buffer.count else { throw failure("unexpected end of data") }
        defer { offset += 1 }
        return buffer[offset]
    }

    /// Four bytes, big-endian.
    public mutating func u32() throws -> UInt32 {
        guard remaining >= 4 else { throw failure("unexpected end of data") }
        var v: UInt32 = 0
        for i in 0..<4 { v = v << 8 | UInt32(buffer[offset + i]) }
        offset += 4
        return v
    }

    /// Eight bytes, big-endian.
    public mutating func u64() throws -> UInt64 {
        guard remaining >= 8 else { throw failure("unexpected end of data") }
        var v: UInt64 = 0
        for i in 0..<8 { v = v << 8 | UInt64(buffer[offset + i]) }
        offset += 8
        return v
    }

    /// Minimal unsigned LEB128.
    public mutating func varint() throws -> UInt64 {
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
    public mutating func length(minimumItemSize: Int = 1) throws -> Int {
        let value = try varint()
        guard value <= UInt64(remaining / max(minimumItemSize, 1)) else {
            throw failure("length \(value) exceeds the \(remaining) bytes left")
        }
        return Int(value)
    }

    /// A zig-zag signed integer.
    public mutating func zigzag() throws -> Int64 {
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
        guard count >= 0, count <= remaining else { throw failure("unexpected end of data") }
        defer { offset += count }
        return Array(UnsafeRawBufferPointer(rebasing: buffer[offset..<offset + count]))
    }

    /// `count` raw bytes without copying; valid as long as the underlying buffer is.
    public mutating func rawSlice(_ count: Int) throws -> UnsafeRawBufferPointer {
        guard count >= 0, count <= remaining else { throw failure("unexpected end of data") }
        defer { offset += count }
        return UnsafeRawBufferPointer(rebasing: buffer[offset..<offset + count])
    }

    /// Length-prefixed raw bytes.
    public mutating func blob() throws -> [UInt8] {
        try raw(length())
    }

    /// Length-prefixed UTF-8; invalid UTF-8 is an error.
    public mutating func string() throws -> String {
        let slice = try rawSlice(length())
        guard let text = String(validating: slice, as: UTF8.self) else {
            throw failure("invalid UTF-8 in string")
        }
        return text
    }
}
