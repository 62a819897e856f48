/// What a query means, record by record (`Docs/DATA-MODEL.md`, "Queries"). The engine's
/// indexes only narrow down candidates; this decides.
///
/// Rules: string equality and ordering ignore case, `BEGINSWITH` does not; numbers
/// compare by value across INT64 and DOUBLE; references compare by record ID (their
/// action is ignored) and may be matched by a bare record name; a comparison with a
/// list field holds if it holds for an element; a missing field satisfies only the
/// negated comparators (`NOT_EQUALS`, `NOT_IN`, `NOT_LIST_…`, `NOT_BEGINS_WITH`).
public enum QueryEvaluator {
    /// Whether `record` is of the query's type and passes every filter.
    /// `isSearchable` names the fields whose words `self CONTAINS` reads (the schema's
    /// SEARCHABLE fields); by default every string field.
    public static func matches(_ record: Record, _ query: Query, searchable isSearchable: (String) -> Bool = { _ in true })
        -> Bool
    {
        var tokens = RecordTokens()
        return matches(record, query, searchable: isSearchable, tokens: &tokens)
    }

    /// ``matches(_:_:searchable:)`` keeping the record's tokens in `tokens`, to be
    /// reused by other queries on the same version of the record.
    public static func matches(
        _ record: Record, _ query: Query, searchable isSearchable: (String) -> Bool, tokens: inout RecordTokens
    ) -> Bool {
        guard !query.matchesNothing, record.recordType == query.recordType else { return false }
        return query.filters.allSatisfy { matches(record, $0, searchable: isSearchable, tokens: &tokens) }
    }

    /// The values `key` has in `record` — a list field's elements — or `nil` when the
    /// record has no such value.
    public static func values(_ key: QueryKey, in record: Record) -> [FieldValue]? {
        switch key {
        case .field(let name):
            return record[name]?.scalars
        case .recordName:
            return [.string(record.recordID.recordName)]
        case .creationDate:
            return record.creationDate.map { [.timestamp($0)] }
        case .modificationDate:
            return record.modificationDate.map { [.timestamp($0)] }
        case .creatorUserRecordID:
            return record.creatorUserRecordID.map { [.reference(Reference(recordID: $0))] }
        case .lastModifiedUserRecordID:
            return record.lastModifiedUserRecordID.map { [.reference(Reference(recordID: $0))] }
        case .parent:
            return record.parent.map { [.reference($0)] }
        case .share:
            return record.share.map { [.reference($0)] }
        case .allTokens:
            return nil
        }
    }

    /// Whether `record` passes `filter` (`isSearchable` as for ``matches(_:_:searchable:)``).
    public static func matches(_ record: Record, _ filter: QueryFilter, searchable isSearchable: (String) -> Bool = { _ in true })
        -> Bool
    {
        var tokens = RecordTokens()
        return matches(record, filter, searchable: isSearchable, tokens: &tokens)
    }

    static func matches(
        _ record: Record, _ filter: QueryFilter, searchable isSearchable: (String) -> Bool, tokens: inout RecordTokens
    ) -> Bool {
        switch filter.comparator {
        case .containsAllTokens, .containsAnyTokens:
            guard let wanted = filter.tokens else { return false }
            let have: Set<String>
            if case .field(let name) = filter.key {
                have = tokens.field(name, of: record)
            } else {
                have = tokens.all(of: record, where: isSearchable)
            }
            return filter.comparator == .containsAllTokens
                ? wanted.isSubset(of: have) : !wanted.isDisjoint(with: have)
        default:
            break
        }
        let whole: FieldValue? = if case .field(let name) = filter.key { record[name] } else { nil }
        return matches(present: values(filter.key, in: record), whole: whole, filter)
    }

    /// Whether a record whose value in the filter's field is `value` (`nil`: it has
    /// none) passes `filter`, a filter on a user field that is not a token search:
    /// what a plan reading that one value from a stored record asks, without the rest.
    public static func matches(fieldValue value: FieldValue?, _ filter: QueryFilter) -> Bool {
        matches(present: value?.scalars, whole: value, filter)
    }

    /// Whether a filter that is not a token search matches: `present` are the key's
    /// values in the record (a list's elements), `whole` the field's value itself.
    private static func matches(present: [FieldValue]?, whole: FieldValue?, _ filter: QueryFilter) -> Bool {
        let query = filter.value
        let elements = present ?? []
        let members = query.scalars
        switch filter.comparator {
        case .equals:
            if case .list(let list) = query, case .list(let field)? = whole {
                return list.count == field.count && zip(list, field).allSatisfy { equal($0, $1) }
            }
            return elements.contains { equal($0, query) }
        case .notEquals:
            return !elements.contains { equal($0, query) }
        case .lessThan:
            return elements.contains { compare($0, query).map { $0 < 0 } ?? false }
        case .lessThanOrEquals:
            return elements.contains { compare($0, query).map { $0 <= 0 } ?? false }
        case .greaterThan:
            return elements.contains { compare($0, query).map { $0 > 0 } ?? false }
        case .greaterThanOrEquals:
            return elements.contains { compare($0, query).map { $0 >= 0 } ?? false }
        case .near:
            guard case .location(let center) = query, let radius = filter.distance else { return false }
            return elements.contains { if case .location(let l) = $0 { Geo.distance(l, center) < radius } else { false } }
        case .in, .listContainsAny:
            return contains(anyOf: elements, filter, members)
        case .notIn, .notListContainsAny:
            return !contains(anyOf: elements, filter, members)
        case .listContains:
            return elements.contains { equal($0, query) }
        case .notListContains:
            return !elements.contains { equal($0, query) }
        case .listContainsAll:
            return present != nil && containsAll(members, of: elements)
        case .notListContainsAll:
            return !(present != nil && containsAll(members, of: elements))
        case .beginsWith, .listMemberBeginsWith:
            return elements.contains { beginsWith($0, query) }
        case .notBeginsWith, .notListMemberBeginsWith:
            return !elements.contains { beginsWith($0, query) }
        case .containsAllTokens, .containsAnyTokens:
            return false  // handled above
        }
    }

    /// Whether some element equals a member of the filter's list: by lookup in the
    /// filter's ``MemberSet``, built once per filter.
    static func contains(anyOf elements: [FieldValue], _ filter: QueryFilter, _ members: [FieldValue]) -> Bool {
        elements.contains { isMember($0, filter, members) }
    }

    /// Whether `element` equals a member of the filter's list (`members`, its scalars).
    static func isMember(_ element: FieldValue, _ filter: QueryFilter, _ members: [FieldValue]) -> Bool {
        if let set = filter.members { return set.contains(element) }
        return members.contains { equal(element, $0) }
    }

    /// Whether every member equals some element. Small lists are compared pairwise;
    /// past that the record's elements are hashed (equality is symmetric), so the
    /// cost is their sum, not their product.
    static func containsAll(_ members: [FieldValue], of elements: [FieldValue]) -> Bool {
        if members.count * elements.count <= 64 {
            return members.allSatisfy { member in elements.contains { equal($0, member) } }
        }
        let have = MemberSet(elements)
        return members.allSatisfy { have.contains($0) }
    }

    /// Equality as queries see it.
    public static func equal(_ a: FieldValue, _ b: FieldValue) -> Bool {
        switch (a, b) {
        case (.reference(let x), .reference(let y)): return x.recordID == y.recordID
        case (.reference(let x), .string(let name)), (.string(let name), .reference(let x)):
            return x.recordID.recordName == name
        case (.location(let x), .location(let y)): return x == y
        case (.bytes(let x), .bytes(let y)): return x == y
        case (.asset(let x), .asset(let y)): return x == y
        default: return compare(a, b) == 0
        }
    }

    /// Ordering as queries see it (negative, zero, positive), or `nil` for values
    /// of kinds that do not compare.
    public static func compare(_ a: FieldValue, _ b: FieldValue) -> Int? {
        switch (a, b) {
        case (.string(let x), .string(let y)):
            return order(Array(TextFolding.caseFolded(x).utf8), Array(TextFolding.caseFolded(y).utf8))
        case (.int64(let x), .int64(let y)): return x < y ? -1 : (x == y ? 0 : 1)
        case (.int64(let x), .double(let y)): return order(Double(x), y)
        case (.double(let x), .int64(let y)): return order(x, Double(y))
        case (.double(let x), .double(let y)): return order(x, y)
        case (.timestamp(let x), .timestamp(let y)):
            return order(x.millisecondsSince1970, y.millisecondsSince1970)
        case (.timestamp(let x), .int64(let y)): return order(x.millisecondsSince1970, y)
        case (.int64(let x), .timestamp(let y)): return order(x, y.millisecondsSince1970)
        case (.reference(let x), .reference(let y)):
            return order(Array(x.recordID.recordName.utf8), Array(y.recordID.recordName.utf8))
        case (.bytes(let x), .bytes(let y)): return order(x, y)
        default: return nil
        }
    }

    static func beginsWith(_ value: FieldValue, _ prefix: FieldValue) -> Bool {
        guard case .string(let text) = value, case .string(let start) = prefix else { return false }
        return text.utf8.starts(with: start.utf8)
    }

    static func order<T: Comparable>(_ x: T, _ y: T) -> Int { x < y ? -1 : (x == y ? 0 : 1) }

    static func order(_ x: [UInt8], _ y: [UInt8]) -> Int {
        x == y ? 0 : (x.lexicographicallyPrecedes(y) ? -1 : 1)
    }
}
