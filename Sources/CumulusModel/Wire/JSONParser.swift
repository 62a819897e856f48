/// Parses JSON text into a ``JSONDocument``'s tape in one pass: what every request
/// body and ``JSONValue/parse(_:memoryLimit:)`` go through.
///
/// Decoding through `JSONDecoder` tried each kind of value in turn and threw an error
/// carrying the whole coding path at every miss, so a 4 MiB body of values nested
/// 100 deep took minutes of CPU (`Docs/SECURITY.md`, "JSON"). This parser reads each
/// byte once and builds no value: it checks the text against JSON's grammar and
/// records where each value lies (``JSONDocument/Entry``), and values are made from
/// the tape only when asked for.
///
/// It keeps what the decoder did, so clients see no difference:
/// - a number without fraction or exponent that fits `Int64` is `.int`; any other
///   number is read as a `Double`, and is `.int` again when that double is integral
///   and exactly an `Int64` (`1.0`, `1e2`); a number too large for a double is refused;
/// - the first of duplicate keys wins, and one trailing comma is allowed;
/// - control characters in strings, unpaired surrogates and invalid UTF-8 are refused;
/// - values nest at most ``maxDepth`` deep.
///
/// **Memory.** The tape takes one ``JSONDocument/Entry`` (12 bytes) per value or key,
/// so at most 6 bytes per byte of text (`1,`), sized before it is written
/// (``entryBound(_:)``). It counts against its document's memory limit, with the
/// values later built from it (``JSONDocument/Node/json()``).
struct JSONParser {
    /// The deepest nesting accepted (as `JSONDecoder`'s limit): CloudKit's bodies
    /// nest under ten deep.
    static let maxDepth = 512

    private let bytes: UnsafeRawBufferPointer
    private var index = 0
    private var depth = 0
    /// The tape being written, in document order.
    private var tape: [JSONDocument.Entry] = []

    private init(_ bytes: UnsafeRawBufferPointer, capacity: Int = 0) {
        self.bytes = bytes
        tape.reserveCapacity(capacity)
    }

    /// The most entries the tape of `bytes` can have: a value or key is the first
    /// thing in the text or follows a `[`, `{`, `,` or `:` (counted in strings too,
    /// which only raises the bound), and takes a byte and a separator of its own.
    static func entryBound(_ bytes: UnsafeRawBufferPointer) -> Int {
        var delimiters = 0
        for byte in bytes {
            // `,` `:` `[` `{`
            delimiters &+= (byte == 0x2C || byte == 0x3A || byte == 0x5B || byte == 0x7B) ? 1 : 0
        }
        return min(delimiters + 1, bytes.count / 2 + 1)
    }

    /// The tape of the one value `bytes` holds, with only whitespace around it, in an
    /// array of exactly ``entryBound(_:)`` entries' capacity: it never grows, so what
    /// it takes is known before it is written (``JSONDocument/init(parsing:memoryLimit:)``
    /// counts it).
    static func tape(_ bytes: UnsafeRawBufferPointer, capacity: Int) throws(CumulusError) -> [JSONDocument.Entry] {
        var parser = JSONParser(bytes, capacity: capacity)
        parser.skipWhitespace()
        try parser.value()
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw parser.failure("text after the value") }
        return parser.tape
    }

    private func failure(_ what: String) -> CumulusError {
        CumulusError(.invalidArguments, "malformed JSON: \(what) at byte \(index)")
    }

    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipWhitespace() {
        while let byte = current, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { index += 1 }
    }

    private mutating func append(_ kind: JSONDocument.Kind, _ a: Int, _ b: Int) {
        tape.append(JSONDocument.Entry(kind: kind, a: UInt32(truncatingIfNeeded: a), b: UInt32(truncatingIfNeeded: b)))
    }

    private mutating func value() throws(CumulusError) {
        guard let byte = current else { throw failure("a value was expected") }
        switch byte {
        case UInt8(ascii: "{"): try container(.object, closedBy: UInt8(ascii: "}"))
        case UInt8(ascii: "["): try container(.array, closedBy: UInt8(ascii: "]"))
        case UInt8(ascii: "\""): try string()
        case UInt8(ascii: "t"): try literal("true"); append(.true, index - 4, index)
        case UInt8(ascii: "f"): try literal("false"); append(.false, index - 5, index)
        case UInt8(ascii: "n"): try literal("null"); append(.null, index - 4, index)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try number()
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

    /// An array or object: its entry, then each element (or each member's key and
    /// value), with the entry's count and end filled in once they are known.
    private mutating func container(_ kind: JSONDocument.Kind, closedBy closer: UInt8) throws(CumulusError) {
        depth += 1
        guard depth <= Self.maxDepth else { throw failure("values nested more than \(Self.maxDepth) deep") }
        let slot = tape.count
        append(kind, 0, 0)
        var count = 0
        index += 1  // [ or {
        skipWhitespace()
        if current != closer {
            while true {
                skipWhitespace()
                if kind == .object {
                    guard current == UInt8(ascii: "\"") else { throw failure("a key was expected") }
                    try string()
                    skipWhitespace()
                    guard current == UInt8(ascii: ":") else { throw failure("':' was expected") }
                    index += 1
                    skipWhitespace()
                }
                try value()
                count += 1
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
        // A tape of more than 2^32 entries would need a body of 8 GiB: the server
        // takes 4 MiB.
        tape[slot].a = UInt32(truncatingIfNeeded: count)
        tape[slot].b = UInt32(truncatingIfNeeded: tape.count)
    }

    /// A string, from its opening quote past its closing one: its entry spans the
    /// text between the quotes, and says whether it holds escapes.
    private mutating func string() throws(CumulusError) {
        index += 1  // "
        let start = index
        var escaped = false
        var runStart = index
        while true {
            guard let byte = current else { throw failure("unterminated string") }
            switch byte {
            case UInt8(ascii: "\""):
                let run = UnsafeRawBufferPointer(rebasing: bytes[runStart..<index])
                // Each run between escapes is checked alone: an escape is ASCII and ends
                // any sequence, so the runs are valid exactly when the whole text is.
                let valid = BinaryReader.isWellFormedUTF8(run)
                append(escaped ? .escapedString : .string, start, index)
                index += 1
                guard valid else { throw failure("invalid UTF-8 in a string") }
                return
            case UInt8(ascii: "\\"):
                guard BinaryReader.isWellFormedUTF8(UnsafeRawBufferPointer(rebasing: bytes[runStart..<index])) else {
                    throw failure("invalid UTF-8 in a string")
                }
                escaped = true
                index += 1
                _ = try escape()
                runStart = index
            case 0..<0x20:
                throw failure("a control character in a string")
            default:
                index += 1
            }
        }
    }

    /// The text of the string entry spanning `range` of `bytes`, its escapes decoded:
    /// the parser checked it, so this cannot fail on a tape it wrote.
    static func unescape(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> [UInt8] {
        var parser = JSONParser(UnsafeRawBufferPointer(rebasing: bytes[..<range.upperBound]))
        parser.index = range.lowerBound
        var utf8: [UInt8] = []
        utf8.reserveCapacity(range.count)
        var runStart = parser.index
        while parser.index < range.upperBound {
            if bytes[parser.index] == UInt8(ascii: "\\") {
                utf8.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[runStart..<parser.index]))
                parser.index += 1
                do { utf8.append(contentsOf: Character(try parser.escape()).utf8) } catch { return utf8 }
                runStart = parser.index
            } else {
                parser.index += 1
            }
        }
        utf8.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[runStart..<range.upperBound]))
        return utf8
    }

    /// The character one escape (after its backslash) stands for, checked: what the
    /// parse validates and ``unescape(_:_:)`` writes, read by the one function.
    private mutating func escape() throws(CumulusError) -> Unicode.Scalar {
        guard let byte = current else { throw failure("unterminated string") }
        index += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): return Unicode.Scalar(byte)
        case UInt8(ascii: "b"): return "\u{08}"
        case UInt8(ascii: "f"): return "\u{0C}"
        case UInt8(ascii: "n"): return "\n"
        case UInt8(ascii: "r"): return "\r"
        case UInt8(ascii: "t"): return "\t"
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
            return character
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

    /// A number, checked against JSON's grammar and converted once to learn its kind
    /// (and refuse one out of a double's range); its value is read again when asked.
    private mutating func number() throws(CumulusError) {
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
        guard Self.number(UnsafeRawBufferPointer(rebasing: bytes[start..<index]), integral: integral) != nil else {
            throw failure("a number out of range")
        }
        append(.number, start, index)
    }

    /// The value of a number's text, which the grammar accepted.
    static func number(_ text: UnsafeRawBufferPointer) -> JSONValue? {
        number(text, integral: !text.contains { $0 == UInt8(ascii: ".") || $0 | 0x20 == UInt8(ascii: "e") })
    }

    /// The value of a number's text, which the grammar accepted; `nil` past a
    /// double's range. `integral`: the text has no fraction or exponent.
    static func number(_ text: UnsafeRawBufferPointer, integral: Bool) -> JSONValue? {
        if integral, let exact = integer(text) { return .int(exact) }
        guard let double = Double(String(decoding: text, as: UTF8.self)), double.isFinite else { return nil }
        // Digits alone that overflow Int64 stay a double; a fraction or exponent that
        // lands on an integer is one (as JSONDecoder read them).
        if !integral, let exact = Int64(exactly: double) { return .int(exact) }
        return .double(double)
    }

    /// Digits with an optional minus as an `Int64`, or `nil` when out of its range:
    /// what `Int64(String)` answers, without making the string.
    static func integer(_ text: UnsafeRawBufferPointer) -> Int64? {
        var index = 0
        let negative = text.first == UInt8(ascii: "-")
        if negative { index = 1 }
        guard index < text.count else { return nil }
        var magnitude: UInt64 = 0
        while index < text.count {
            let digit = text[index] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            let (times, overflow) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, carry) = times.addingReportingOverflow(UInt64(digit))
            guard !overflow, !carry else { return nil }
            magnitude = sum
            index += 1
        }
        if negative {
            guard magnitude <= UInt64(Int64.max) + 1 else { return nil }
            return magnitude == UInt64(Int64.max) + 1 ? Int64.min : -Int64(magnitude)
        }
        return magnitude <= UInt64(Int64.max) ? Int64(magnitude) : nil
    }
}
