/// Parses JSON text into a ``JSONValue`` in one pass: what ``JSONValue/parse(_:)``
/// uses for every request body.
///
/// Decoding through `JSONDecoder` tried each kind of value in turn and threw an error
/// carrying the whole coding path at every miss, so a 4 MiB body of values nested
/// 100 deep took minutes of CPU (`Docs/SECURITY.md`, "JSON"). This parser reads each
/// byte once and allocates only the values it returns.
///
/// It keeps what the decoder did, so clients see no difference:
/// - a number without fraction or exponent that fits `Int64` is `.int`; any other
///   number is read as a `Double`, and is `.int` again when that double is integral
///   and exactly an `Int64` (`1.0`, `1e2`); a number too large for a double is refused;
/// - the first of duplicate keys wins, and one trailing comma is allowed;
/// - control characters in strings, unpaired surrogates and invalid UTF-8 are refused;
/// - values nest at most ``maxDepth`` deep.
///
/// **Memory.** A value takes far more memory than its text: `[1],` is four bytes
/// and about a hundred once parsed (an array's own allocation, its slot, the
/// number's). So a 4 MiB body could hold a hundred megabytes while it is parsed, and
/// the server parses as many at once as it has cores. The parser therefore estimates
/// what it has built, as it builds it (``Cost``), and stops with `limitExceeded` past
/// `memoryLimit`, which the server reserves before it parses
/// (``JSONValue/memoryLimit(forBodyBytes:)``).
struct JSONParser {
    /// The deepest nesting accepted (as `JSONDecoder`'s limit): CloudKit's bodies
    /// nest under ten deep.
    static let maxDepth = 512

    /// What parsed values cost in memory, roughly and on the high side (measured: a
    /// body of `[1]` elements took about 85 bytes per element, estimated 128).
    enum Cost {
        /// Any value: its slot in an array or a dictionary, with the slack they keep.
        static let value = 32
        /// An array or object: its own allocation.
        static let container = 64
        /// An object's member besides its value: the key and its hash-table slot.
        static let member = 48
        /// A string longer than Swift keeps inline: its allocation besides its bytes.
        static let heapString = 32
    }

    private let bytes: UnsafeRawBufferPointer
    private var index = 0
    private var depth = 0
    /// The estimated bytes of what has been built so far, and the most allowed.
    private var cost = 0
    private let memoryLimit: Int

    private init(_ bytes: UnsafeRawBufferPointer, memoryLimit: Int) {
        self.bytes = bytes
        self.memoryLimit = memoryLimit
    }

    /// The one value `bytes` holds, with only whitespace around it; `limitExceeded`
    /// once the values built would take more than `memoryLimit` bytes.
    static func parse(_ bytes: UnsafeRawBufferPointer, memoryLimit: Int = .max) throws(CumulusError) -> JSONValue {
        var parser = JSONParser(bytes, memoryLimit: memoryLimit)
        parser.skipWhitespace()
        let value = try parser.value()
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw parser.failure("text after the value") }
        return value
    }

    private func failure(_ what: String) -> CumulusError {
        CumulusError(.invalidArguments, "malformed JSON: \(what) at byte \(index)")
    }

    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipWhitespace() {
        while let byte = current, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { index += 1 }
    }

    /// Counts `bytes` more of parsed values against the limit.
    private mutating func spend(_ bytes: Int) throws(CumulusError) {
        cost += bytes
        guard cost <= memoryLimit else {
            throw CumulusError(
                .limitExceeded,
                "this body's JSON would take more than \(memoryLimit) bytes in memory once parsed (stopped at byte \(index)): "
                    + "send fewer values per request")
        }
    }

    private mutating func value() throws(CumulusError) -> JSONValue {
        guard let byte = current else { throw failure("a value was expected") }
        try spend(Cost.value)
        switch byte {
        case UInt8(ascii: "{"): return try object()
        case UInt8(ascii: "["): return try array()
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw failure("unexpected character")
        }
    }

    private mutating func literal(_ word: StaticString) throws(CumulusError) {
        let count = word.utf8CodeUnitCount
        guard bytes.count - index >= count else { throw failure("unexpected end") }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] {
            throw failure("unexpected character")
        }
        index += count
    }

    private mutating func nest() throws(CumulusError) {
        depth += 1
        guard depth <= Self.maxDepth else { throw failure("values nested more than \(Self.maxDepth) deep") }
        try spend(Cost.container)
    }

    private mutating func array() throws(CumulusError) -> JSONValue {
        var elements: [JSONValue] = []
        try items(closedBy: UInt8(ascii: "]")) { parser throws(CumulusError) in elements.append(try parser.value()) }
        return .array(elements)
    }

    private mutating func object() throws(CumulusError) -> JSONValue {
        var members: [String: JSONValue] = [:]
        try items(closedBy: UInt8(ascii: "}")) { parser throws(CumulusError) in
            guard parser.current == UInt8(ascii: "\"") else { throw parser.failure("a key was expected") }
            let key = try parser.string()
            try parser.spend(Cost.member)
            parser.skipWhitespace()
            guard parser.current == UInt8(ascii: ":") else { throw parser.failure("':' was expected") }
            parser.index += 1
            parser.skipWhitespace()
            let member = try parser.value()
            if members[key] == nil { members[key] = member }
        }
        return .object(members)
    }

    /// The one loop of arrays and objects: from the opening bracket past `closer`,
    /// calling `item` at each element or member, with the separators, one trailing
    /// comma (as JSONDecoder took it) and the nesting depth.
    private mutating func items(
        closedBy closer: UInt8, _ item: (inout JSONParser) throws(CumulusError) -> Void
    ) throws(CumulusError) {
        try nest()
        index += 1  // [ or {
        skipWhitespace()
        if current != closer {
            while true {
                skipWhitespace()
                try item(&self)
                skipWhitespace()
                guard current == UInt8(ascii: ",") else {
                    guard current == closer else {
                        throw failure("',' or '\(Character(Unicode.Scalar(closer)))' was expected")
                    }
                    break
                }
                index += 1
                skipWhitespace()
                if current == closer { break }
            }
        }
        index += 1  // closer
        depth -= 1
    }

    /// A string, from its opening quote past its closing one.
    private mutating func string() throws(CumulusError) -> String {
        index += 1  // "
        var utf8: [UInt8] = []
        var runStart = index
        while true {
            guard let byte = current else { throw failure("unterminated string") }
            switch byte {
            case UInt8(ascii: "\""):
                // Without escapes (most strings) the bytes are taken as they stand.
                let text = utf8.isEmpty
                    ? String(validating: bytes[runStart..<index], as: UTF8.self)
                    : String(validating: utf8 + bytes[runStart..<index], as: UTF8.self)
                index += 1
                guard let text else { throw failure("invalid UTF-8 in a string") }
                if text.utf8.count > 15 { try spend(Cost.heapString + text.utf8.count) }
                return text
            case UInt8(ascii: "\\"):
                utf8.append(contentsOf: bytes[runStart..<index])
                index += 1
                try escape(into: &utf8)
                runStart = index
            case 0..<0x20:
                throw failure("a control character in a string")
            default:
                index += 1
            }
        }
    }

    private mutating func escape(into utf8: inout [UInt8]) throws(CumulusError) {
        guard let byte = current else { throw failure("unterminated string") }
        index += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(byte)
        case UInt8(ascii: "b"): utf8.append(0x08)
        case UInt8(ascii: "f"): utf8.append(0x0C)
        case UInt8(ascii: "n"): utf8.append(0x0A)
        case UInt8(ascii: "r"): utf8.append(0x0D)
        case UInt8(ascii: "t"): utf8.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = UInt32(try hex4())
            if (0xD800...0xDBFF).contains(scalar) {
                guard bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
                else { throw failure("an unpaired surrogate") }
                index += 2
                let low = UInt32(try hex4())
                guard (0xDC00...0xDFFF).contains(low) else { throw failure("an unpaired surrogate") }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(scalar) {
                throw failure("an unpaired surrogate")
            }
            guard let character = Unicode.Scalar(scalar) else { throw failure("an invalid \\u escape") }
            utf8.append(contentsOf: Character(character).utf8)
        default:
            throw failure("an invalid escape")
        }
    }

    private mutating func hex4() throws(CumulusError) -> UInt16 {
        guard bytes.count - index >= 4 else { throw failure("a short \\u escape") }
        var value: UInt16 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw failure("an invalid \\u escape")
            }
            value = value << 4 | UInt16(digit)
            index += 1
        }
        return value
    }

    /// A number, checked against JSON's grammar before it is converted.
    private mutating func number() throws(CumulusError) -> JSONValue {
        let start = index
        if current == UInt8(ascii: "-") { index += 1 }
        func digits(_ parser: inout JSONParser) -> Int {
            let from = parser.index
            while let byte = parser.current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) { parser.index += 1 }
            return parser.index - from
        }
        let leading = current
        let integerDigits = digits(&self)
        guard integerDigits > 0 else { throw failure("a digit was expected") }
        guard leading != UInt8(ascii: "0") || integerDigits == 1 else { throw failure("a leading zero") }
        var integral = true
        if current == UInt8(ascii: ".") {
            index += 1
            integral = false
            guard digits(&self) > 0 else { throw failure("a digit was expected after '.'") }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            index += 1
            integral = false
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            guard digits(&self) > 0 else { throw failure("a digit was expected in the exponent") }
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if integral, let exact = Int64(text) { return .int(exact) }
        guard let double = Double(text), double.isFinite else { throw failure("a number out of range") }
        // Digits alone that overflow Int64 stay a double; a fraction or exponent that
        // lands on an integer is one (as JSONDecoder read them).
        if !integral, let exact = Int64(exactly: double) { return .int(exact) }
        return .double(double)
    }
}
