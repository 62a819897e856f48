/// The comparators of a query filter: CloudKit Web Services' twenty plus CloudKit
/// JS's `LIST_CONTAINS_ANY` (`Docs/HTTP-API.md`, "Queries on the wire"). The raw value is the wire name.
/// The predicate parser and the HTTP API's `filterBy` both produce these, so the
/// two front ends can never disagree about what a query means.
public enum QueryComparator: String, Sendable, Hashable, CaseIterable, Codable {
    /// Field equals the value (strings compare case-insensitively; references by record ID).
    case equals = "EQUALS"
    /// Field differs from the value.
    case notEquals = "NOT_EQUALS"
    /// Field < value.
    case lessThan = "LESS_THAN"
    /// Field ≤ value.
    case lessThanOrEquals = "LESS_THAN_OR_EQUALS"
    /// Field > value.
    case greaterThan = "GREATER_THAN"
    /// Field ≥ value.
    case greaterThanOrEquals = "GREATER_THAN_OR_EQUALS"
    /// Location field within `distance` metres of the value (a location).
    case near = "NEAR"
    /// The record's tokens include every token of the value (a string).
    case containsAllTokens = "CONTAINS_ALL_TOKENS"
    /// The record's tokens include at least one token of the value.
    case containsAnyTokens = "CONTAINS_ANY_TOKENS"
    /// Field equals one of the value's elements (a list).
    case `in` = "IN"
    /// Field equals none of the value's elements.
    case notIn = "NOT_IN"
    /// List field has an element equal to the value.
    case listContains = "LIST_CONTAINS"
    /// List field has no element equal to the value.
    case notListContains = "NOT_LIST_CONTAINS"
    /// List field has no element equal to any of the value's elements.
    case notListContainsAny = "NOT_LIST_CONTAINS_ANY"
    /// List field has an element equal to one of the value's elements.
    case listContainsAny = "LIST_CONTAINS_ANY"
    /// List field has every one of the value's elements.
    case listContainsAll = "LIST_CONTAINS_ALL"
    /// List field lacks at least one of the value's elements.
    case notListContainsAll = "NOT_LIST_CONTAINS_ALL"
    /// String field starts with the value (case-sensitive).
    case beginsWith = "BEGINS_WITH"
    /// String field does not start with the value.
    case notBeginsWith = "NOT_BEGINS_WITH"
    /// List of strings has an element starting with the value.
    case listMemberBeginsWith = "LIST_MEMBER_BEGINS_WITH"
    /// List of strings has no element starting with the value.
    case notListMemberBeginsWith = "NOT_LIST_MEMBER_BEGINS_WITH"
}

extension QueryComparator {
    /// The comparators whose value is a list of members to look values up in (`IN`,
    /// `NOT_IN`, `LIST_CONTAINS_ANY`, `LIST_CONTAINS_ALL` and their negations): their
    /// lists are bounded (``QueryBounds/maxFilterValues``) and hashed (``MemberSet``).
    public var testsMembership: Bool {
        switch self {
        case .in, .notIn, .listContainsAny, .notListContainsAny, .listContainsAll, .notListContainsAll: true
        default: false
        }
    }
}
