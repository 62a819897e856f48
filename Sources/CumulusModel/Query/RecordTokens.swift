/// The tokens of one version of a record, found once and kept for every filter that
/// asks: matching a save against many query subscriptions with token filters used to
/// tokenize the record again for each (issue 40: 200 subscriptions of 20 token filters
/// held the writer 6–7 s on one 150 KB save). Use one value per record version.
public struct RecordTokens: Sendable {
    private var byField: [String: Set<String>] = [:]
    private var all: Set<String>?

    /// No tokens found yet.
    public init() {}

    /// The tokens of field `name` of `record` (its strings, list elements included).
    public mutating func field(_ name: String, of record: Record) -> Set<String> {
        if let found = byField[name] { return found }
        let found = (record[name]?.scalars ?? []).reduce(into: Set<String>()) { tokens, value in
            if case .string(let text) = value { tokens.formUnion(Tokenizer.tokens(text)) }
        }
        byField[name] = found
        return found
    }

    /// The tokens of the searchable string fields of `record` (`self CONTAINS`). The
    /// first call's `isSearchable` decides: a record's type has one schema.
    public mutating func all(of record: Record, where isSearchable: (String) -> Bool) -> Set<String> {
        if let all { return all }
        let found = Tokenizer.tokens(of: record, where: isSearchable)
        all = found
        return found
    }
}
