/// Byte encodings of values whose byte order is the values' order, for index keys
/// and sort positions: a kind byte, then the value. `Docs/LOG-FORMAT.md` §9.
///
/// - integers and timestamps: 8 bytes big-endian with the sign bit flipped;
/// - doubles: 8 bytes of IEEE bits, all bits flipped for negatives, else the sign bit set;
/// - strings, bytes, record names: the bytes with each 0x00 written 0x00 0xFF, then the
///   terminator 0x00 0x00 — so a shorter string sorts before its extensions and what
///   follows the value (a record name) cannot be confused with it. At most
///   ``maxValueBytes`` escaped bytes are kept; longer values are cut and then compare
///   equal on their common prefix (the evaluator settles those).
public enum OrderedEncoding {
    /// What kind of value follows; kinds sort in this order.
    public enum Kind: UInt8, Sendable, CaseIterable {
        /// A string, case-folded: equality and ordering (case-insensitive).
        case foldedString = 1
        /// A 64-bit integer.
        case int64 = 2
        /// A double.
        case double = 3
        /// A string exactly as stored: `BEGINSWITH` (case-sensitive).
        case exactString = 4
        /// A timestamp, milliseconds.
        case timestamp = 5
        /// A reference: the target's record name.
        case reference = 6
        /// A location: latitude then longitude, as doubles.
        case location = 7
        /// Raw bytes.
        case bytes = 8
    }

    /// Most bytes an escaped value takes in an index key (escapes included, the
    /// terminator not): with a 33-byte prefix and a 255-byte record name a key stays
    /// within LMDB's 511.
    public static let maxValueBytes = 200

    /// Appends `value` with its sign bit flipped.
    public static func appendInt(_ value: Int64, to bytes: inout [UInt8]) {
        let flipped = UInt64(bitPattern: value) ^ (1 << 63)
        withUnsafeBytes(of: flipped.bigEndian) { bytes.append(contentsOf: $0) }
    }

    /// Appends a double so that byte order is numeric order (−0 and +0 equal).
    public static func appendDouble(_ value: Double, to bytes: inout [UInt8]) {
        let bits = (value == 0 ? 0 : value).bitPattern
        let ordered = bits & (1 << 63) != 0 ? ~bits : bits | (1 << 63)
        withUnsafeBytes(of: ordered.bigEndian) { bytes.append(contentsOf: $0) }
    }

    /// Reads back a double written by ``appendDouble(_:to:)`` at `offset`.
    public static func readDouble(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Double? {
        guard offset + 8 <= bytes.count else { return nil }
        var ordered: UInt64 = 0
        for i in 0..<8 { ordered = ordered << 8 | UInt64(bytes[offset + i]) }
        let bits = ordered & (1 << 63) != 0 ? ordered & ~(1 << 63) : ~ordered
        return Double(bitPattern: bits)
    }

    /// Appends escaped, terminated bytes (at most ``maxValueBytes`` of them);
    /// returns whether the value was cut.
    @discardableResult
    public static func appendEscaped(_ value: some Collection<UInt8>, to bytes: inout [UInt8], terminate: Bool = true)
        -> Bool
    {
        // Most values are short and hold no NUL: copy them whole. A generic byte loop
        // across the module boundary costs a witness call per byte (4% of a save).
        let copied = value.withContiguousStorageIfAvailable { buffer -> Bool in
            guard buffer.count <= maxValueBytes, !buffer.contains(0) else { return false }
            bytes.append(contentsOf: buffer)
            return true
        }
        if copied == true {
            if terminate { bytes.append(contentsOf: [0, 0] as [UInt8]) }
            return false
        }
        // The limit counts written bytes (escapes included), so a key's length is
        // bounded whatever the value holds.
        var written = 0
        var taken = 0
        for byte in value {
            let width = byte == 0 ? 2 : 1
            if written + width > maxValueBytes { break }
            bytes.append(byte)
            if byte == 0 { bytes.append(0xFF) }
            written += width
            taken += 1
        }
        if terminate {
            bytes.append(0)
            bytes.append(0)
        }
        return taken < value.count
    }

    /// The ordering form (kind ‖ value) of a scalar: strings case-folded; `nil` for
    /// assets and lists, which have no order.
    public static func encoded(_ value: FieldValue) -> [UInt8]? {
        var bytes: [UInt8] = []
        return appendEncoded(value, to: &bytes) ? bytes : nil
    }

    /// Appends the ordering form of a scalar to `bytes` (an index key's prefix, so
    /// the key is built in one buffer); returns `false`, appending nothing, for assets
    /// and lists.
    @discardableResult
    public static func appendEncoded(_ value: FieldValue, to bytes: inout [UInt8]) -> Bool {
        switch value {
        case .string(let text):
            bytes.append(Kind.foldedString.rawValue)
            appendEscaped(TextFolding.caseFolded(text).utf8, to: &bytes)
        case .int64(let number):
            bytes.append(Kind.int64.rawValue)
            appendInt(number, to: &bytes)
        case .double(let number):
            bytes.append(Kind.double.rawValue)
            appendDouble(number, to: &bytes)
        case .timestamp(let time):
            bytes.append(Kind.timestamp.rawValue)
            appendInt(time.millisecondsSince1970, to: &bytes)
        case .reference(let reference):
            bytes.append(Kind.reference.rawValue)
            appendEscaped(reference.recordID.recordName.utf8, to: &bytes)
        case .location(let location):
            bytes.append(Kind.location.rawValue)
            appendDouble(location.latitude, to: &bytes)
            appendDouble(location.longitude, to: &bytes)
        case .bytes(let data):
            bytes.append(Kind.bytes.rawValue)
            appendEscaped(data, to: &bytes)
        case .asset, .list:
            return false
        }
        return true
    }

    /// Appends the exact form (kind ‖ unfolded bytes) of a string, which `BEGINSWITH`
    /// ranges over.
    public static func appendExact(_ text: String, to bytes: inout [UInt8]) {
        bytes.append(Kind.exactString.rawValue)
        appendEscaped(text.utf8, to: &bytes)
    }

    /// The smallest byte string greater than every string starting with `prefix`
    /// (`nil` if there is none).
    public static func prefixUpperBound(_ prefix: [UInt8]) -> [UInt8]? {
        var bound = prefix
        while let last = bound.last {
            if last == 0xFF {
                bound.removeLast()
            } else {
                bound[bound.count - 1] = last + 1
                return bound
            }
        }
        return nil
    }
}
