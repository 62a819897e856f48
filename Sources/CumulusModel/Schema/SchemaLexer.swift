/// Reads schema text one token at a time, in one linear pass that never fails.
///
/// Works on the text's UTF-8 bytes: everything the language spells is ASCII, and no
/// byte of a multi-byte sequence is ASCII, so a quote or comment marker is found by
/// its byte alone. Columns still count Unicode scalars (a scalar is counted at its
/// leading byte), so a combining mark or an emoji is one column. Lines end at `\n`
/// only (a `\r` before it is whitespace).
///
/// Whitespace is any scalar with the Unicode White_Space property, and U+FEFF (a
/// byte-order mark). Comments run from `//` or `--` to the end of the line, or from
/// `/*` to the next `*/` (they do not nest). A quoted name runs from `"` to the next
/// `"` on the same line and has no escapes: no name may contain a quote.
///
/// What the language cannot use becomes an `invalid`, `unterminatedQuote` or
/// `unterminatedComment` token rather than an error, so the parser reports whatever
/// is leftmost as "expected …, found …". After `.end` (and after an unterminated
/// comment, which runs to the end) every call returns `.end` again.
struct SchemaLexer {
    private let bytes: [UInt8]
    private var index = 0
    private var line = 1
    private var column = 1

    /// A lexer positioned at the start of `text`.
    init(_ text: String) {
        bytes = Array(text.utf8)
    }

    private func byte(at offset: Int) -> UInt8? {
        offset < bytes.count ? bytes[offset] : nil
    }

    /// Moves past one byte, counting lines, and columns at each scalar's leading byte.
    private mutating func step() {
        guard index < bytes.count else { return }
        if bytes[index] == UInt8(ascii: "\n") {
            line += 1
            column = 1
        } else if bytes[index] & 0xC0 != 0x80 {
            column += 1
        }
        index += 1
    }

    private mutating func step(to end: Int) {
        while index < end { step() }
    }

    /// Moves past `count` bytes known to be ASCII and not `\n`.
    private mutating func skip(ascii count: Int) {
        index += count
        column += count
    }

    /// The next token.
    mutating func next() -> SchemaToken {
        skipTrivia()
        let start = (line: line, column: column)
        func token(_ kind: SchemaToken.Kind, to end: Int) -> SchemaToken {
            step(to: end)
            return SchemaToken(kind: kind, line: start.line, column: start.column)
        }
        func single(_ kind: SchemaToken.Kind) -> SchemaToken {
            skip(ascii: 1)
            return SchemaToken(kind: kind, line: start.line, column: start.column)
        }
        guard index < bytes.count else { return SchemaToken(kind: .end, line: line, column: column) }
        let c = bytes[index]
        switch c {
        case UInt8(ascii: "("): return single(.leftParen)
        case UInt8(ascii: ")"): return single(.rightParen)
        case UInt8(ascii: "<"): return single(.less)
        case UInt8(ascii: ">"): return single(.greater)
        case UInt8(ascii: ","): return single(.comma)
        case UInt8(ascii: ";"): return single(.semicolon)
        case UInt8(ascii: "\""):
            var end = index + 1
            while let d = byte(at: end), d != UInt8(ascii: "\""), d != UInt8(ascii: "\n") { end += 1 }
            guard byte(at: end) == UInt8(ascii: "\"") else { return token(.unterminatedQuote, to: end) }
            let name = String(decoding: bytes[(index + 1)..<end], as: UTF8.self)
            return token(.quoted(name), to: end + 1)
        case UInt8(ascii: "/") where byte(at: index + 1) == UInt8(ascii: "*"):
            // skipTrivia stops at a `/*` only when it has no `*/`: the rest is unreadable.
            return token(.unterminatedComment, to: bytes.count)
        default:
            break
        }
        if Self.isWordByte(c) {
            var end = index + 1
            while end < bytes.count, Self.isWordByte(bytes[end]) { end += 1 }
            let word = String(decoding: bytes[index..<end], as: UTF8.self)
            skip(ascii: end - index)
            return SchemaToken(kind: .word(word, SchemaToken.Keyword(spelling: word)), line: start.line, column: start.column)
        }
        let (scalar, length) = scalar(at: index)
        return token(.invalid(scalar), to: index + length)
    }

    /// Skips whitespace and comments, stopping at a `/*` that is never closed.
    private mutating func skipTrivia() {
        while index < bytes.count {
            let c = bytes[index]
            if c == UInt8(ascii: " ") || c == UInt8(ascii: "\t") {
                skip(ascii: 1)
                continue
            }
            let following = byte(at: index + 1)
            if (c == UInt8(ascii: "/") && following == UInt8(ascii: "/"))
                || (c == UInt8(ascii: "-") && following == UInt8(ascii: "-"))
            {
                while let d = byte(at: index), d != UInt8(ascii: "\n") { step() }
            } else if c == UInt8(ascii: "/") && following == UInt8(ascii: "*") {
                var end = index + 2
                while end < bytes.count, !(bytes[end] == UInt8(ascii: "*") && byte(at: end + 1) == UInt8(ascii: "/")) {
                    end += 1
                }
                guard end < bytes.count else { return }
                step(to: end + 2)
            } else if c < 0x80 {
                guard c == 0x20 || (c >= 0x09 && c <= 0x0D) else { return }
                step()
            } else {
                let (scalar, length) = scalar(at: index)
                guard scalar.properties.isWhitespace || scalar == "\u{FEFF}" else { return }
                step(to: index + length)
            }
        }
    }

    /// The scalar whose UTF-8 encoding starts at `offset`, and its length in bytes.
    /// The bytes come from a `String`, so they are valid UTF-8; should they not be,
    /// the answer is U+FFFD over one byte rather than a trap.
    private func scalar(at offset: Int) -> (Unicode.Scalar, Int) {
        let lead = bytes[offset]
        let length = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4
        guard offset + length <= bytes.count else { return ("\u{FFFD}", 1) }
        var value = UInt32(length == 1 ? lead : lead & (0xFF >> (length + 1)))
        for k in 1..<length { value = value << 6 | UInt32(bytes[offset + k] & 0x3F) }
        guard let scalar = Unicode.Scalar(value) else { return ("\u{FFFD}", 1) }
        return (scalar, length)
    }

    /// ASCII letters, digits and `_`: what a word is made of.
    static func isWordByte(_ c: UInt8) -> Bool {
        // Comparisons rather than range patterns: a debug build calls `~=` for those.
        (c >= 0x61 && c <= 0x7A) || (c >= 0x41 && c <= 0x5A) || (c >= 0x30 && c <= 0x39) || c == 0x5F
    }
}
