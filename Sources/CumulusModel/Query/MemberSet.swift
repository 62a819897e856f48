/// The values of an `IN`-like filter (`IN`, `NOT_IN`, `LIST_CONTAINS_ANY`,
/// `LIST_CONTAINS_ALL` and their negations), hashed once so that testing a record's
/// value costs a lookup, not a pass over the list (issue 40: a 500,000-value `NOT_IN`
/// over 600 records took 23 s of one core).
///
/// `contains` answers exactly what `members.contains { QueryEvaluator.equal(value, $0) }`
/// would: each kind of value is kept where the kinds it equals look for it. Strings
/// equal strings case-insensitively (by their folded bytes) and references by record
/// name (exactly); numbers equal across INT64 and DOUBLE by value, and INT64 equals a
/// TIMESTAMP's milliseconds. Kinds without a hashed form are compared one by one.
public struct MemberSet: Sendable {
    /// String members, case-folded, as bytes (equality is byte equality after folding).
    private var foldedStrings: Set<HashedBytes> = []
    /// String members as written: a reference equals a string naming its record.
    private var strings: Set<String> = []
    /// Reference members by record ID, and by record name for string values.
    private var references: Set<RecordID> = []
    private var referenceNames: Set<String> = []
    private var ints: Set<Int64> = []
    private var intsAsDoubles: Set<Double> = []
    private var doubles: Set<Double> = []
    /// Timestamp members' milliseconds.
    private var timestamps: Set<Int64> = []
    private var bytes: Set<HashedBytes> = []
    /// Members of other kinds (locations, assets), compared one by one.
    private var others: [FieldValue] = []
    /// How many members the list had.
    public private(set) var count = 0

    /// The set of `members` (a list's elements; a scalar is a list of one).
    public init(_ members: [FieldValue]) {
        for member in members {
            count += 1
            switch member {
            case .string(let text):
                foldedStrings.insert(HashedBytes(Array(TextFolding.caseFolded(text).utf8)))
                strings.insert(text)
            case .reference(let reference):
                references.insert(reference.recordID)
                referenceNames.insert(reference.recordID.recordName)
            case .int64(let value):
                ints.insert(value)
                intsAsDoubles.insert(Double(value))
            case .double(let value):
                doubles.insert(value)
            case .timestamp(let value):
                timestamps.insert(value.millisecondsSince1970)
            case .bytes(let value):
                bytes.insert(HashedBytes(value))
            case .location, .asset, .list:
                others.append(member)
            }
        }
    }

    /// Whether some member equals `value` as queries see equality.
    public func contains(_ value: FieldValue) -> Bool {
        let hashed: Bool
        switch value {
        case .string(let text):
            hashed = foldedStrings.contains(HashedBytes(Array(TextFolding.caseFolded(text).utf8))) || referenceNames.contains(text)
        case .reference(let reference):
            hashed = references.contains(reference.recordID) || strings.contains(reference.recordID.recordName)
        case .int64(let number):
            hashed = ints.contains(number) || doubles.contains(Double(number)) || timestamps.contains(number)
        case .double(let number):
            hashed = doubles.contains(number) || intsAsDoubles.contains(number)
        case .timestamp(let time):
            hashed = timestamps.contains(time.millisecondsSince1970) || ints.contains(time.millisecondsSince1970)
        case .bytes(let data):
            hashed = bytes.contains(HashedBytes(data))
        case .location, .asset, .list:
            hashed = false
        }
        return hashed || others.contains { QueryEvaluator.equal(value, $0) }
    }
}
