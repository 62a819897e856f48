import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusViews

/// Narrows a query to candidate record names using the indexes alone, one zone at
/// a time: each filter an index can answer yields the names that satisfy it (a
/// ``NameSet``, in name order as the field index gives them), and those are
/// intersected by merging before any record is read. A token search's words are
/// merged in the token index's own order (``TokenPostings``), then sorted by name.
///
/// Indexable: equality, `IN`, list membership, ranges, `BEGINSWITH` (on the field
/// index); token search (token index); `NEAR` (latitude range of the location
/// index, distance checked on the key); record names. Not indexable: the negated
/// comparators, which say nothing about records lacking the field — those are
/// checked on the records themselves.
struct CandidateFinder {
    let views: Views
    let txn: LMDBReadTransaction
    let database: DatabaseID
    let zoneKey: [UInt8]
    let zoneID: ZoneID
    let recordType: String

    /// The names satisfying every indexable filter, or `nil` if no filter is indexable.
    /// With `selectiveOnly`, ranges are left out: when a plan walks another index in
    /// order, checking a broad range on the few records it reads beats building a set
    /// of every record in the range.
    func candidates(for filters: [QueryFilter], selectiveOnly: Bool = false) throws -> NameSet? {
        var result: NameSet?
        for filter in filters {
            if selectiveOnly, [.lessThan, .lessThanOrEquals, .greaterThan, .greaterThanOrEquals].contains(filter.comparator) {
                continue
            }
            guard let names = try names(for: filter) else { continue }
            result = result.map { $0.intersection(names) } ?? names
            if result?.isEmpty == true { return result }
        }
        return result
    }

    /// Whether the index answers `filter` exactly, so records it yields need not be
    /// checked against it again: token searches (the index holds exactly the
    /// evaluator's tokens) and equality with values short enough to be kept whole.
    static func isExact(_ filter: QueryFilter) -> Bool {
        switch filter.comparator {
        case .containsAllTokens, .containsAnyTokens:
            if case .string(let text) = filter.value, filter.key == .allTokens { return !Tokenizer.tokens(text).isEmpty }
            return false
        case .equals, .in, .listContains, .listContainsAny:
            guard filter.key != .recordName, filter.key != .allTokens else { return false }
            if filter.comparator == .equals, case .list = filter.value { return false }
            return filter.value.scalars.allSatisfy { value in
                switch value {
                case .int64, .double, .timestamp: true
                case .string(let text): TextFolding.caseFolded(text).utf8.count <= 100
                case .reference(let reference): reference.recordID.recordName.utf8.count <= 100
                default: false
                }
            }
        default:
            return false
        }
    }

    /// The names satisfying one filter, or `nil` if no index answers it.
    func names(for filter: QueryFilter) throws -> NameSet? {
        switch filter.comparator {
        case .containsAllTokens, .containsAnyTokens:
            guard case .string(let text) = filter.value, filter.key == .allTokens else { return nil }
            let tokens = Tokenizer.tokens(text)
            guard !tokens.isEmpty else { return nil }
            let prefix = IndexKeys.tokenPrefix(zoneKey, type: recordType)
            let all = filter.comparator == .containsAllTokens
            var result: TokenPostings?
            for token in tokens.sorted() {
                let wordKey = IndexKeys.tokenKey(prefix, token)
                if all, let sofar = result {
                    // The next word's postings are checked against those kept so far as
                    // they are read, not gathered first.
                    result = try sofar.intersection(scanning: views.tables.tokenIndex, wordKey: wordKey, in: txn)
                    if result?.isEmpty == true { break }
                    continue
                }
                let postings = try TokenPostings.scan(views.tables.tokenIndex, wordKey: wordKey, in: txn)
                result = all ? postings : (result ?? .empty).union(postings)
                if all, postings.isEmpty { break }
            }
            let indexed = result?.names ?? .empty
            // Records whose token entries are still pending: the index's postings of
            // them are stale, their current tokens are matched here instead.
            let pending = try views.pendingTokens(zoneKey: zoneKey, txn)
            guard !pending.isEmpty else { return indexed }
            let matched = pending.matching(recordType: recordType, tokens: tokens, all: all)
            return indexed.subtracting(NameSet(pending.names)).union(NameSet(matched))
        default:
            break
        }
        if filter.key == .recordName {
            switch filter.comparator {
            case .equals, .in:
                var names: [String] = []
                for value in filter.value.scalars {
                    // The predicate form sends a name, the web form a REFERENCE.
                    let name: String
                    switch value {
                    case .string(let text): name = text
                    case .reference(let reference) where reference.recordID.zoneID == zoneID: name = reference.recordID.recordName
                    default: continue
                    }
                    if try views.recordExists(RecordID(recordName: name, zoneID: zoneID), in: database, txn) {
                        names.append(name)
                    }
                }
                return NameSet(names)
            default:
                return nil
            }
        }
        guard let fieldName = IndexKeys.fieldName(for: filter.key) else { return nil }
        let prefix = IndexKeys.fieldPrefix(zoneKey, type: recordType, field: fieldName)
        switch filter.comparator {
        case .equals where !isList(filter.value), .listContains:
            return try equal(prefix, filter.value)
        case .in, .listContainsAny:
            var names = NameSet.empty
            for member in filter.value.scalars { names = names.union(try equal(prefix, member)) }
            return names
        case .listContainsAll:
            var names: NameSet?
            for member in filter.value.scalars {
                let found = try equal(prefix, member)
                names = names.map { $0.intersection(found) } ?? found
            }
            return names
        case .lessThan, .lessThanOrEquals, .greaterThan, .greaterThanOrEquals:
            return try range(prefix, filter.comparator, filter.value)
        case .beginsWith, .listMemberBeginsWith:
            guard case .string(let start) = filter.value else { return .empty }
            var key = prefix + [OrderedEncoding.Kind.exactString.rawValue]
            OrderedEncoding.appendEscaped(start.utf8, to: &key, terminate: false)
            return try scanNames(views.tables.fieldIndex, prefix: key, valuePrefix: prefix.count)
        case .near:
            guard case .location(let center) = filter.value, let radius = filter.distance else { return .empty }
            return try near(prefix, center, radius)
        default:
            return nil
        }
    }

    private func isList(_ value: FieldValue) -> Bool {
        if case .list = value { return true }
        return false
    }

    /// Encoded forms of `value` as each index kind that could hold an equal value.
    private func equalityKeys(_ value: FieldValue) -> [[UInt8]] {
        var keys: [[UInt8]] = []
        switch value {
        case .string(let text):
            if let folded = OrderedEncoding.encoded(value) { keys.append(folded) }
            if let reference = OrderedEncoding.encoded(.reference(Reference(recordID: RecordID(recordName: text, zoneID: zoneID)))) {
                keys.append(reference)
            }
        case .int64(let number):
            keys.append(OrderedEncoding.encoded(value) ?? [])
            keys.append(OrderedEncoding.encoded(.double(Double(number))) ?? [])
            keys.append(OrderedEncoding.encoded(.timestamp(Timestamp(millisecondsSince1970: number))) ?? [])
        case .double(let number):
            keys.append(OrderedEncoding.encoded(value) ?? [])
            if number.rounded() == number, let exact = Int64(exactly: number) {
                keys.append(OrderedEncoding.encoded(.int64(exact)) ?? [])
            }
        case .timestamp(let time):
            keys.append(OrderedEncoding.encoded(value) ?? [])
            keys.append(OrderedEncoding.encoded(.int64(time.millisecondsSince1970)) ?? [])
        case .reference(let reference):
            if reference.recordID.zoneID == zoneID, let key = OrderedEncoding.encoded(value) { keys.append(key) }
        case .bytes, .location:
            if let key = OrderedEncoding.encoded(value) { keys.append(key) }
        case .asset, .list:
            break
        }
        return keys.filter { !$0.isEmpty }
    }

    private func equal(_ prefix: [UInt8], _ value: FieldValue) throws -> NameSet {
        var names = NameSet.empty
        for encoded in equalityKeys(value) {
            names = names.union(try scanNames(views.tables.fieldIndex, prefix: prefix + encoded, valuePrefix: prefix.count))
        }
        return names
    }

    /// A range over each numeric, timestamp or string kind the bound could compare with.
    private func range(_ prefix: [UInt8], _ comparator: QueryComparator, _ bound: FieldValue) throws -> NameSet {
        let lower = comparator == .greaterThan || comparator == .greaterThanOrEquals
        let inclusive = comparator == .greaterThanOrEquals || comparator == .lessThanOrEquals
        var bounds: [(kind: OrderedEncoding.Kind, value: FieldValue, inclusive: Bool)] = []
        switch bound {
        case .string(let text):
            let truncated = text.utf8.count * 2 > OrderedEncoding.maxValueBytes
            bounds.append((.foldedString, bound, inclusive || truncated))
        case .int64(let number):
            bounds.append((.int64, bound, inclusive))
            bounds.append((.double, .double(Double(number)), inclusive))
            bounds.append((.timestamp, .timestamp(Timestamp(millisecondsSince1970: number)), inclusive))
        case .double(let number):
            bounds.append((.double, bound, inclusive))
            // Integers compared with a fractional bound: round toward the kept side.
            let adjusted = lower ? number.rounded(.up) : number.rounded(.down)
            let exact = adjusted == number
            if adjusted.magnitude < 9.2e18 {
                bounds.append((.int64, .int64(Int64(adjusted)), exact ? inclusive : true))
            }
        case .timestamp(let time):
            bounds.append((.timestamp, bound, inclusive))
            bounds.append((.int64, .int64(time.millisecondsSince1970), inclusive))
        case .bytes:
            bounds.append((.bytes, bound, true))
        case .reference:
            bounds.append((.reference, bound, true))
        case .location, .asset, .list:
            return .empty
        }
        // In value order, not name order: sorted once at the end.
        var names: [String] = []
        for (kind, value, inclusive) in bounds {
            guard let encoded = OrderedEncoding.encoded(value) else { continue }
            let kindPrefix = prefix + [kind.rawValue]
            let at = prefix + encoded
            let from: [UInt8]
            let to: [UInt8]?
            if lower {
                from = inclusive ? at : (OrderedEncoding.prefixUpperBound(at) ?? at)
                to = OrderedEncoding.prefixUpperBound(kindPrefix)
            } else {
                from = kindPrefix
                to = inclusive ? OrderedEncoding.prefixUpperBound(at) : at
            }
            try views.tables.fieldIndex.scanNames(txn, from: from, to: to, valueStart: prefix.count) { names.append($0) }
        }
        return NameSet(names)
    }

    private func near(_ prefix: [UInt8], _ center: Location, _ radius: Double) throws -> NameSet {
        let span = Geo.latitudeDegrees(forMetres: radius) * 1.01 + 1e-9
        var from = prefix + [OrderedEncoding.Kind.location.rawValue]
        OrderedEncoding.appendDouble(max(-90, center.latitude - span), to: &from)
        var to = prefix + [OrderedEncoding.Kind.location.rawValue]
        OrderedEncoding.appendDouble(min(90, center.latitude + span), to: &to)
        guard let end = OrderedEncoding.prefixUpperBound(to) else { return .empty }
        var names: [String] = []
        let valueStart = prefix.count
        try txn.scan(views.tables.fieldIndex, from: from, to: end) { key, _ in
            let suffix = UnsafeRawBufferPointer(rebasing: key[valueStart...])
            guard let latitude = OrderedEncoding.readDouble(suffix, at: 1),
                let longitude = OrderedEncoding.readDouble(suffix, at: 9)
            else { return true }
            if Geo.distance(Location(latitude: latitude, longitude: longitude), center) < radius,
                let name = IndexKeys.recordName(afterValue: suffix)
            {
                names.append(name)
            }
            return true
        }
        return NameSet(names)
    }

    /// Names of the field-index entries under `prefix`: in name order when `prefix`
    /// holds one whole value (equality), sorted otherwise (`BEGINSWITH` spans values).
    private func scanNames(_ table: LMDBTable, prefix: [UInt8], valuePrefix: Int) throws -> NameSet {
        var names: [String] = []
        try table.scanNames(txn, from: prefix, to: OrderedEncoding.prefixUpperBound(prefix), valueStart: valuePrefix) {
            names.append($0)
        }
        return NameSet(names)
    }
}

extension LMDBTable {
    /// Visits the record names of field-index entries in `[from, to)`; the value
    /// starts at `valueStart` in each key.
    func scanNames(
        _ txn: LMDBReadTransaction, from: [UInt8], to: [UInt8]?, valueStart: Int, _ body: (String) -> Void
    ) throws {
        try txn.scan(self, from: from, to: to) { key, _ in
            if let name = IndexKeys.recordName(afterValue: UnsafeRawBufferPointer(rebasing: key[valueStart...])) {
                body(name)
            }
            return true
        }
    }
}
