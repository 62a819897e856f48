/// Full-text tokens for `self CONTAINS 'text'` (`Docs/DATA-MODEL.md`, "Queries"): string
/// fields split at white space, case- and diacritic-folded; stop words carry no
/// meaning and are neither indexed nor searched for.
public enum Tokenizer {
    /// CloudKit's stop words (`Docs/DATA-MODEL.md`, "Queries").
    public static let stopWords: Set<String> = [
        "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not",
        "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was",
        "will", "with",
    ]

    /// Longest token kept, in UTF-8 bytes; longer words are cut (the index key limit).
    public static let maxTokenLength = 128

    /// The searchable tokens of `text`: folded, stop words removed, unique.
    public static func tokens(_ text: String) -> Set<String> {
        var result = Set<String>()
        forEachToken(in: text) { result.insert($0) }
        return result
    }

    /// Calls `body` with each searchable token of `text` in order, repeats included.
    public static func forEachToken(in text: String, _ body: (String) -> Void) {
        forEachTokenUTF8(in: text) { body(String(decoding: $0, as: UTF8.self)) }
    }

    /// Calls `body` with the UTF-8 bytes of each searchable token of `text` in order,
    /// repeats included: what the token index is keyed by, without a `String` per word.
    public static func forEachTokenUTF8(in text: String, _ body: (ArraySlice<UInt8>) -> Void) {
        var text = text
        var word: [UInt8] = []
        text.withUTF8 { forEachTokenUTF8(in: UnsafeRawBufferPointer($0), word: &word, body) }
    }

    /// ``forEachTokenUTF8(in:_:)`` over valid UTF-8 bytes, building each token in
    /// `word` (a buffer kept across calls, so a record's strings share one).
    static func forEachTokenUTF8(
        in text: UnsafeRawBufferPointer, word: inout [UInt8], _ body: (ArraySlice<UInt8>) -> Void
    ) {
        // Most text is ASCII. There every byte is its own Character except CR LF, which
        // is white space like its parts, so splitting bytes at ASCII white space and
        // lower-casing them is what the Character walk below does, without Unicode
        // property lookups per character (those dominated indexing in the profile).
        guard BinaryReader.isASCII(text) else {
            forEachFoldedToken(in: String(decoding: text, as: UTF8.self), body)
            return
        }
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte &- 0x09 < 5 }
        let count = text.count
        var index = 0
        while index < count {
            while index < count, isSpace(text[index]) { index += 1 }
            let start = index
            while index < count, !isSpace(text[index]) { index += 1 }
            guard index > start else { break }
            // A word is found whole, then copied and lower-cased at once: a byte at a
            // time into the buffer was most of tokenizing in a replay's profile.
            word.removeAll(keepingCapacity: true)
            word.append(contentsOf: UnsafeRawBufferPointer(rebasing: text[start..<min(index, start + maxTokenLength)]))
            word.withUnsafeMutableBufferPointer { bytes in
                for position in bytes.indices where bytes[position] &- 0x41 < 26 { bytes[position] |= 0x20 }
            }
            // The token is a slice of `word` only while `body` runs: had it still shared
            // the buffer when `word` was emptied, every word would have copied it.
            do {
                let token = word[...]
                if !isStopWord(token) { body(token) }
            }
        }
    }

    /// The tokens of text that is not all ASCII: split at Unicode white space, each
    /// word case- and diacritic-folded.
    private static func forEachFoldedToken(in text: String, _ body: (ArraySlice<UInt8>) -> Void) {
        for word in text.split(whereSeparator: { $0.isWhitespace }) {
            var token = TextFolding.tokenFolded(String(word))
            if token.utf8.count > maxTokenLength {
                // A cut inside a character decodes to U+FFFD, as it always has: index
                // keys written before must stay the keys written now.
                token = String(decoding: token.utf8.prefix(maxTokenLength), as: UTF8.self)
            }
            if !token.isEmpty && !stopWords.contains(token) { body(Array(token.utf8)[...]) }
        }
    }

    /// The stop words packed as ``packed(_:)`` does, sorted: every word is checked on
    /// every save, and a hashed `Set` lookup per word showed in the indexing profile.
    private static let packedStopWords: [UInt64] = stopWords.map { word in
        // Every stop word fits (the longest has five bytes); one that did not would be
        // missed here and found by the non-ASCII path, so the two would disagree.
        guard let value = packed(Array(word.utf8)[...]) else { preconditionFailure("stop word '\(word)' is over 7 bytes") }
        return value
    }.sorted()

    /// A word of at most 7 bytes as one number: its bytes, and its length in the top
    /// byte (so a word with a NUL byte differs from its prefix); `nil` if longer.
    private static func packed(_ word: ArraySlice<UInt8>) -> UInt64? {
        guard word.count <= 7 else { return nil }
        var value = UInt64(word.count) << 56
        for (shift, byte) in zip(stride(from: 0, to: 56, by: 8), word) { value |= UInt64(byte) << UInt64(shift) }
        return value
    }

    /// Whether `token` (folded bytes) is a stop word.
    static func isStopWord(_ token: ArraySlice<UInt8>) -> Bool {
        guard let value = packed(token) else { return false }
        // Read once: each read of a static checks that it was initialized.
        let words = packedStopWords
        var low = 0
        var high = words.count
        while low < high {
            let middle = (low + high) / 2
            if words[middle] < value { low = middle + 1 } else { high = middle }
        }
        return low < words.count && words[low] == value
    }

    /// The searchable tokens of every string field of `record`, list elements included.
    public static func tokens(of record: Record) -> Set<String> {
        tokens(of: record) { _ in true }
    }

    /// The searchable tokens of the string fields of `record` that `isSearchable` names.
    public static func tokens(of record: Record, where isSearchable: (String) -> Bool) -> Set<String> {
        var result = Set<String>()
        forEachTokenUTF8(of: record, where: isSearchable) { result.insert(String(decoding: $0, as: UTF8.self)) }
        return result
    }

    /// Calls `body` with the UTF-8 bytes of each token of the string fields of `record`
    /// that `isSearchable` names, list elements included, repeats included.
    public static func forEachTokenUTF8(
        of record: Record, where isSearchable: (String) -> Bool, _ body: (ArraySlice<UInt8>) -> Void
    ) {
        var word: [UInt8] = []
        record.forEachString(where: isSearchable) { forEachTokenUTF8(in: $0, word: &word, body) }
    }
}
