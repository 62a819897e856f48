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
        for word in text.split(whereSeparator: { $0.isWhitespace }) {
            var token = TextFolding.tokenFolded(String(word))
            if token.utf8.count > maxTokenLength {
                token = String(decoding: token.utf8.prefix(maxTokenLength), as: UTF8.self)
            }
            if !token.isEmpty && !stopWords.contains(token) { result.insert(token) }
        }
        return result
    }

    /// The searchable tokens of every string field of `record`, list elements included.
    public static func tokens(of record: Record) -> Set<String> {
        tokens(of: record) { _ in true }
    }

    /// The searchable tokens of the string fields of `record` that `isSearchable` names.
    public static func tokens(of record: Record, where isSearchable: (String) -> Bool) -> Set<String> {
        var result = Set<String>()
        for (field, value) in record.fields where isSearchable(field) {
            for case .string(let text) in value.scalars { result.formUnion(tokens(text)) }
        }
        return result
    }
}
