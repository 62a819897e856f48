/// Full-text tokens for `self CONTAINS 'text'` (SPEC §1, CLOUDKIT.md §5): string
/// fields split at white space, case- and diacritic-folded; stop words carry no
/// meaning and are neither indexed nor searched for.
public enum Tokenizer {
    /// CloudKit's stop words (CLOUDKIT.md §5).
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
        // Most text is ASCII. There every byte is its own Character except CR LF, which
        // is white space like its parts, so splitting bytes at ASCII white space and
        // lower-casing them is what the Character walk below does, without Unicode
        // property lookups per character (those dominated indexing in the profile).
        let wasASCII = text.withUTF8 { bytes -> Bool in
            guard !bytes.contains(where: { $0 >= 0x80 }) else { return false }
            var word = [UInt8]()
            word.reserveCapacity(32)
            func flush() {
                guard !word.isEmpty else { return }
                // The token is a slice of `word` only while `body` runs: had it still
                // shared the buffer when `word` was emptied, every word would have
                // copied it (one allocation per token).
                do {
                    let token = word.prefix(maxTokenLength)
                    if !isStopWord(token) { body(token) }
                }
                word.removeAll(keepingCapacity: true)
            }
            for byte in bytes {
                switch byte {
                case 0x09...0x0D, 0x20: flush()
                case 0x41...0x5A: word.append(byte | 0x20)
                default: word.append(byte)
                }
            }
            flush()
            return true
        }
        if wasASCII { return }
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
        var low = 0
        var high = packedStopWords.count
        while low < high {
            let middle = (low + high) / 2
            if packedStopWords[middle] < value { low = middle + 1 } else { high = middle }
        }
        return low < packedStopWords.count && packedStopWords[low] == value
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
        record.forEachField(where: isSearchable) { _, value in
            value.forEachScalar { scalar in
                if case .string(let text) = scalar { forEachTokenUTF8(in: text, body) }
            }
        }
    }
}
