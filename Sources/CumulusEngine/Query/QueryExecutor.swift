import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusViews

/// Runs a query against one read snapshot of the views and returns one page.
///
/// Plans, chosen per query (`Docs/ARCHITECTURE.md`, "Queries"):
/// - **Index walk** — one zone, one sort key with a field index: the sort field's
///   index is walked in order from the cursor, so a page costs its own size
///   however deep it is; candidates from other filters are checked on the keys.
///   Records lacking the sort field come after, in name order.
/// - **Name order** — one zone, no sort: candidate names (or the type's names)
///   in order from the cursor, stopping after a page.
/// - **Group walk** — one zone, several sort keys, the first with a field index:
///   the first key's index is walked in order from the cursor's group, each run of
///   records with one first-key value is sorted by the other keys in memory, and
///   the walk stops once a page is full and its group done. A group is read whole,
///   but only the records that can reach the page are kept, so memory is bounded by
///   the page; records lacking the first key come last, as one group (read only
///   when the page still has room for them).
/// - **Collect and sort** — several zones, a distance sort first, or a first sort
///   key with no field index (the record name): every candidate is read, and the
///   best page + 1 matches kept in memory (memory bounded by the page, not by the
///   matches). No index serves the order, so each page reads every candidate: a page
///   that would read more than ``collectScanLimit`` records is refused with
///   `limitExceeded` instead of stalling the server.
/// Every plan reads a record only once the indexes say it can match, and checks it
/// with ``QueryEvaluator`` before returning it; filters no index answers (the
/// negated comparators) are checked on the records read.
///
/// **Hidden records.** A record the caller may not read (``visible`` says no) is
/// passed over inside the walk, before any filter looks at it: it never reaches a
/// page, never makes `more` true, and its values are never compared. A run of them
/// could make one page read without end, so a page passes over at most
/// ``hiddenLimit`` of them; then it ends early, perhaps empty, with a cursor after
/// the last one passed (cursors are encrypted, so that position reveals nothing).
/// The collect-and-sort plan is bounded by ``collectScanLimit`` instead, and the
/// group walk stops only between groups, as it already reads a group whole.
struct QueryExecutor {
    let views: Views
    let txn: LMDBReadTransaction
    let database: DatabaseID
    /// Most records one collect-and-sort page reads (`Docs/SECURITY.md`, "Limits").
    var collectScanLimit = Database.defaultQueryScanLimit
    /// Stored bytes of records after which a page ends, with at least one record: a
    /// page of 400 records of 1 MiB would otherwise be 400 MiB (`Docs/SECURITY.md`).
    var byteLimit = Int.max
    /// Whether the caller may read a record (`nil`: every record).
    var visible: ((Record) throws -> Bool)?
    /// Most hidden records one page passes over before it ends early.
    var hiddenLimit = Database.defaultHiddenScanLimit
    /// The CPU time one page may spend, counted per record read.
    var budget = WorkBudget(Database.defaultRequestCPULimit, for: "this query page")
    /// A cursor on the records view, open while the executor runs: candidates come in
    /// key order from most plans, and LMDB finds each next one on the cursor's page.
    var records: LMDBCursor?

    /// A record the walk read: its stored bytes, borrowed from ``txn`` (valid until it
    /// ends), and the record decoded from them when something had to look at its
    /// values (a filter, the caller's access, a sort position). A page of plain index
    /// or name order with nothing left to check decodes none of its records.
    struct Found {
        let stored: UnsafeRawBufferPointer
        var decoded: Record?
    }

    /// One page of results.
    struct Page {
        /// The page's records as stored, in the query's order: borrowed from the
        /// executor's transaction, valid until it ends.
        var stored: [UnsafeRawBufferPointer] = []
        /// The last record added, kept to build its position from.
        var last: Found?
        /// Where the last record sits in the plan's order: what a cursor resumes after.
        /// Kept for the last record only, not built per result (the position was two of
        /// the nine allocations a result of a name-order page cost).
        var lastPosition: [UInt8]?
        /// Whether a record beyond the page matches too, or the page ended early
        /// after passing over ``QueryExecutor/hiddenLimit`` hidden records.
        var more = false
        /// Hidden records passed over so far.
        var hidden = 0
        /// Stored bytes of the page's records, and where the page ends by them.
        var bytes = 0
        var byteLimit = Int.max

        /// Whether the page holds `limit` records, or its records' bytes reached the
        /// limit: the next match only says there is more.
        func isFull(_ limit: Int) -> Bool { stored.count == limit || bytes >= byteLimit }

        /// Adds `found`; its position is built by the caller when it is the last.
        mutating func append(_ found: Found) {
            stored.append(found.stored)
            bytes += found.stored.count
            last = found
        }

        /// Adds `found`, found at `position`.
        mutating func append(_ found: Found, at position: [UInt8]) {
            append(found)
            lastPosition = position
        }
    }

    /// An empty page that ends at ``byteLimit``.
    private var emptyPage: Page {
        var page = Page()
        page.byteLimit = byteLimit
        return page
    }

    func run(_ query: Query, zones: [ZoneID], after position: [UInt8]?, limit: Int) throws -> Page {
        guard !query.matchesNothing, limit > 0 else { return Page() }
        budget.start()
        if zones.count == 1, let zone = zones.first {
            let zoneKey = views.zoneKeys.zone(database, zone)
            if query.sort.count == 1, query.sort[0].relativeLocation == nil,
                let field = IndexKeys.fieldName(for: query.sort[0].key)
            {
                return try indexWalk(query, zone: zone, zoneKey: zoneKey, field: field, after: position, limit: limit)
            }
            if query.sort.count > 1, query.sort[0].relativeLocation == nil,
                let field = IndexKeys.fieldName(for: query.sort[0].key)
            {
                return try groupWalk(query, zone: zone, zoneKey: zoneKey, field: field, after: position, limit: limit)
            }
            if query.sort.isEmpty {
                return try nameOrder(query, zone: zone, zoneKey: zoneKey, after: position, limit: limit)
            }
        }
        return try collectAndSort(query, zones: zones, after: position, limit: limit)
    }

    private func finder(_ zone: ZoneID, _ zoneKey: [UInt8], _ type: String) -> CandidateFinder {
        CandidateFinder(views: views, txn: txn, database: database, zoneKey: zoneKey, zoneID: zone, recordType: type)
    }

    /// What reading one candidate found.
    enum Candidate {
        /// A record the caller may read that passes the filters.
        case match(Found)
        /// A record the caller may not read: its values were not compared.
        case hidden(Record)
        /// No such record, or one that fails the filters.
        case none

        /// The record, if it matches.
        var match: Found? {
            if case .match(let record) = self { record } else { nil }
        }
    }

    /// The filters left to check on the records read, once candidates were found: the
    /// query's, less those an index answered exactly, and those compiled for the
    /// stored bytes when they are all on user fields (``CompiledFilters``).
    struct Residual {
        let query: Query
        let compiled: CompiledFilters?

        /// `compiling`: whether the bytes will be checked (no caller's access to
        /// decide first, which needs the record).
        init(_ query: Query, compiling: Bool) {
            self.query = query
            compiled = !compiling || query.matchesNothing ? nil : CompiledFilters(query.filters)
        }
    }

    /// Reads a candidate, decides whether the caller may see it, and checks a visible
    /// one against the filters its candidate set did not already settle (`residual`).
    /// `hints` carries the page's strings from one read to the next.
    private func load(
        _ name: String, _ zone: ZoneID, _ zoneKey: [UInt8], _ residual: Residual, _ hints: inout RecordDecodeHints
    ) throws -> Candidate {
        try budget.spend()
        let found = try records.map { try views.storedRecord(zoneKey: zoneKey, name: name, cursor: $0) }
            ?? views.storedRecord(zoneKey: zoneKey, name: name, txn)
        guard let stored = found else { return .none }
        // The record's type is the query's (its index and by-type entries are the
        // type's). With only filters on fields left, they are checked on its bytes,
        // each field read once, and the record is not decoded.
        if visible == nil, let compiled = residual.compiled {
            let matches: Bool
            do {
                matches = try compiled.matches(stored, home: zone)
            } catch {
                let reason = (error as? CumulusError)?.message ?? "\(error)"
                throw CumulusError(
                    .internalError, "the stored values of record \(name) are damaged (\(reason))",
                    recordID: RecordID(recordName: name, zoneID: zone))
            }
            return matches ? .match(Found(stored: stored, decoded: nil)) : .none
        }
        hints.recordID = RecordID(recordName: name, zoneID: zone)
        let record = try RecordCodec.decodeForReading(stored, hints: &hints)
        if let visible, try !visible(record) { return .hidden(record) }
        let matches = QueryEvaluator.matches(record, residual.query)
        // The filter read values unchecked until then: damage it met is an error, not
        // a record that failed to match.
        if let damage = record.storedValuesFailure { throw damage }
        return matches ? .match(Found(stored: stored, decoded: record)) : .none
    }

    /// The record of `found`, decoded from its bytes if the walk has not yet.
    private func record(_ found: Found) throws -> Record {
        if let decoded = found.decoded { return decoded }
        var hints = RecordDecodeHints()
        return try RecordCodec.decodeForReading(found.stored, hints: &hints)
    }

    /// Counts a hidden record passed over; `true` when the page must end here.
    private func passOver(_ page: inout Page) -> Bool {
        page.hidden += 1
        guard page.hidden >= hiddenLimit else { return false }
        page.more = true
        return true
    }

    /// The query without the filters an index answered exactly for `candidates`.
    private func residual(_ query: Query, candidatesFromIndex: Bool, selectiveOnly: Bool = false) -> Residual {
        guard candidatesFromIndex else { return Residual(query, compiling: visible == nil) }
        var rest = query
        rest.filters = query.filters.filter { filter in
            let used = !selectiveOnly
                || ![.lessThan, .lessThanOrEquals, .greaterThan, .greaterThanOrEquals].contains(filter.comparator)
            return !(used && CandidateFinder.isExact(filter))
        }
        return Residual(rest, compiling: visible == nil)
    }

    /// What a plan walking the index of `field` needs: the candidates of the selective
    /// filters (ranges are checked on the records read, not built into a set), the
    /// filters left to check, and the prefix of the field's entries.
    private func sortIndexInputs(_ query: Query, zone: ZoneID, zoneKey: [UInt8], field: String) throws
        -> (candidates: NameSet?, rest: Residual, prefix: [UInt8])
    {
        let candidates = try finder(zone, zoneKey, query.recordType).candidates(for: query.filters, selectiveOnly: true)
        let rest = residual(query, candidatesFromIndex: candidates != nil, selectiveOnly: true)
        return (candidates, rest, IndexKeys.fieldPrefix(zoneKey, type: query.recordType, field: field))
    }

    // MARK: Plans

    private func nameOrder(_ query: Query, zone: ZoneID, zoneKey: [UInt8], after position: [UInt8]?, limit: Int) throws
        -> Page
    {
        let candidates = try finder(zone, zoneKey, query.recordType).candidates(for: query.filters)
        // Both are in name (byte) order already: the candidates by construction, the
        // type's names as the by-type table keeps them.
        let names = try candidates?.names ?? views.recordNames(ofType: query.recordType, zoneKey: zoneKey, in: txn)
        let rest = residual(query, candidatesFromIndex: candidates != nil)
        var page = emptyPage
        var hints = RecordDecodeHints()
        var candidatePosition: [UInt8] = []
        // The page resumes after its last record, or after the hidden one it ended at.
        var lastName = String?.none
        for name in names {
            if let position {
                SortPosition.named(name, lacking: [], zoneKey: zoneKey, into: &candidatePosition)
                if !position.lexicographicallyPrecedes(candidatePosition) { continue }
            }
            let candidate = try load(name, zone, zoneKey, rest, &hints)
            if case .hidden = candidate {
                guard passOver(&page) else { continue }
                lastName = name
                break
            }
            guard let found = candidate.match else { continue }
            if page.isFull(limit) {
                page.more = true
                break
            }
            page.append(found)
            lastName = name
        }
        if let lastName {
            var position: [UInt8] = []
            SortPosition.named(lastName, lacking: [], zoneKey: zoneKey, into: &position)
            page.lastPosition = position
        }
        return page
    }

    private func indexWalk(
        _ query: Query, zone: ZoneID, zoneKey: [UInt8], field: String, after position: [UInt8]?, limit: Int
    ) throws -> Page {
        let sort = query.sort[0]
        let (candidates, rest, prefix) = try sortIndexInputs(query, zone: zone, zoneKey: zoneKey, field: field)
        // Few candidates (the children of one list): reading and sorting them costs
        // their own number, where the walk would pass over every other record's entry.
        if let candidates, candidates.count <= max(Self.candidateSortLimit, 2 * limit) {
            return try collectAndSort(query, zones: [zone], after: position, limit: limit, given: (candidates, rest))
        }
        var page = emptyPage
        let inMissingPhase = position?.first == 0xFF
        var hints = RecordDecodeHints()
        // The last record's position is built once the page is done, from the index
        // entry's value it was found under (`nil`: it lacks the field).
        var lastValue: [UInt8]?
        var candidatePosition: [UInt8] = []
        // Set when the page ended at a hidden record: it resumes after that one.
        var endedAt: [UInt8]?

        func offer(_ found: Found) -> Bool {
            if page.isFull(limit) {
                page.more = true
                return false
            }
            page.append(found)
            return true
        }
        func finished() throws -> Page {
            if let endedAt {
                page.lastPosition = endedAt
            } else if let last = page.last {
                page.lastPosition = SortPosition.of(
                    try record(last), sort: query.sort, zoneKey: zoneKey, firstValue: lastValue)
            }
            return page
        }

        if !inMissingPhase {
            var resume: [UInt8]?
            if let position, let key = resumeKey(position, prefix: prefix, ascending: sort.ascending) { resume = key }
            var keepGoing = true
            let lower = sort.ascending ? resume.map { $0 + [0] } ?? prefix : prefix
            let upper = sort.ascending ? OrderedEncoding.prefixUpperBound(prefix) : resume ?? OrderedEncoding.prefixUpperBound(prefix)
            try walkSortIndex(
                prefix: prefix, from: lower, to: upper, sort: sort, candidates: candidates, zone, zoneKey, rest, &hints
            ) { candidate, value in
                if case .hidden(let record) = candidate {
                    guard passOver(&page) else { return true }
                    endedAt = SortPosition.of(record, sort: query.sort, zoneKey: zoneKey, firstValue: value)
                    keepGoing = false
                    return false
                }
                guard let found = candidate.match else { return true }
                keepGoing = offer(found)
                if keepGoing { lastValue = value }
                return keepGoing
            }
            if !keepGoing { return try finished() }
        }

        // Records without the sort field, by name in the sort's direction (both sources
        // are in name order already).
        var names = try candidates?.names ?? views.recordNames(ofType: query.recordType, zoneKey: zoneKey, in: txn)
        if !sort.ascending { names.reverse() }
        for name in names {
            if let position, inMissingPhase {
                SortPosition.named(name, lacking: query.sort, zoneKey: zoneKey, into: &candidatePosition)
                if !position.lexicographicallyPrecedes(candidatePosition) { continue }
            }
            let candidate = try load(name, zone, zoneKey, rest, &hints)
            if case .hidden(let record) = candidate, SortPosition.sortValue(record, sort) == nil {
                guard passOver(&page) else { continue }
                var at: [UInt8] = []
                SortPosition.named(name, lacking: query.sort, zoneKey: zoneKey, into: &at)
                endedAt = at
                break
            }
            guard var found = candidate.match else { continue }
            let record = try record(found)
            guard SortPosition.sortValue(record, sort) == nil else { continue }
            found.decoded = record
            guard offer(found) else { break }
            lastValue = nil
        }
        return try finished()
    }

    private func groupWalk(
        _ query: Query, zone: ZoneID, zoneKey: [UInt8], field: String, after position: [UInt8]?, limit: Int
    ) throws -> Page {
        let first = query.sort[0]
        let (candidates, rest, prefix) = try sortIndexInputs(query, zone: zone, zoneKey: zoneKey, field: field)
        var page = emptyPage
        var hints = RecordDecodeHints()

        func precedes(_ a: (found: Found, position: [UInt8]), _ b: (found: Found, position: [UInt8])) -> Bool {
            a.position.lexicographicallyPrecedes(b.position)
        }

        /// Keeps `entry` for the current group if it follows the cursor. Only the first
        /// records of a group can reach the page (one more than fits says there is
        /// more), so the buffer is cut back to them whenever it doubles: memory stays
        /// bounded by the page, not the group, however many records share a value.
        var group: [(found: Found, position: [UInt8])] = []
        // The greatest position in the current group of a hidden record passed over:
        // where a page that ends between groups resumes if that is past its records.
        var groupHiddenEnd: [UInt8]?
        func collect(_ entry: (found: Found, position: [UInt8])) {
            if let position, !position.lexicographicallyPrecedes(entry.position) { return }
            group.append(entry)
            let room = limit - page.stored.count + 1
            if group.count >= 2 * room + 64 {
                group.sort(by: precedes)
                group.removeLast(group.count - room)
            }
        }

        /// Adds the group's first records to the page; `false` once the page is full
        /// and another record was left over.
        func emit() -> Bool {
            group.sort(by: precedes)
            defer { group.removeAll(keepingCapacity: true) }
            for entry in group {
                if page.isFull(limit) {
                    page.more = true
                    return false
                }
                page.append(entry.found, at: entry.position)
            }
            return true
        }

        if position?.first != 0xFF {
            // Start at the cursor's group (its first key's value), which may have been
            // left part-way: positions inside it are skipped by `collect`.
            var groupStart = prefix
            if let position, let value = Self.firstValue(of: position, ascending: first.ascending) {
                groupStart += value
            }
            var groupValue: [UInt8]?
            var keepGoing = true
            let lower = first.ascending ? groupStart : prefix
            let upper = OrderedEncoding.prefixUpperBound(first.ascending ? prefix : groupStart)
            try walkSortIndex(
                prefix: prefix, from: lower, to: upper, sort: first, candidates: candidates, zone, zoneKey, rest, &hints
            ) { candidate, value in
                if value != groupValue {
                    keepGoing = emit()
                    // A later group lies wholly after the cursor: this record alone
                    // says a full page has more, without reading its group.
                    if keepGoing, page.isFull(limit), groupValue != nil {
                        page.more = true
                        keepGoing = false
                    }
                    // Too many hidden records passed over: end between groups, after
                    // the last one (all of the group's visible records are emitted).
                    if keepGoing, page.hidden >= hiddenLimit {
                        page.more = true
                        if let end = groupHiddenEnd, page.lastPosition.map({ $0.lexicographicallyPrecedes(end) }) ?? true {
                            page.lastPosition = end
                        }
                        keepGoing = false
                    }
                    guard keepGoing else { return false }
                    groupValue = value
                    groupHiddenEnd = nil
                }
                switch candidate {
                case .match(var found):
                    let record = try record(found)
                    found.decoded = record
                    collect((found, SortPosition.of(record, sort: query.sort, zoneKey: zoneKey, firstValue: value)))
                case .hidden(let record):
                    let at = SortPosition.of(record, sort: query.sort, zoneKey: zoneKey, firstValue: value)
                    if let position, !position.lexicographicallyPrecedes(at) { return true }
                    page.hidden += 1
                    if groupHiddenEnd.map({ $0.lexicographicallyPrecedes(at) }) ?? true { groupHiddenEnd = at }
                case .none:
                    break
                }
                return true
            }
            if !keepGoing || !emit() { return page }
        }

        // Records lacking the first key: one group, sorted by the other keys (all after
        // a cursor from the index phase, so with a full page the first one found says
        // there is more).
        let names = try candidates?.names ?? views.recordNames(ofType: query.recordType, zoneKey: zoneKey, in: txn)
        for name in names {
            guard var found = try load(name, zone, zoneKey, rest, &hints).match else { continue }
            let record = try record(found)
            guard SortPosition.sortValue(record, first) == nil else { continue }
            found.decoded = record
            if page.isFull(limit) {
                page.more = true
                return page
            }
            collect((found, SortPosition.of(record, sort: query.sort, zoneKey: zoneKey)))
        }
        _ = emit()
        return page
    }

    /// Walks the index of `sort`'s field (`prefix`) over `lower..<upper`, in the sort's
    /// direction, calling `body` with each record that is a candidate, matches `rest`
    /// (or is hidden from the caller) and sorts by the entry it was found under — a
    /// list's record sorts by one element and is taken only there — and that entry's
    /// value, until `body` returns `false`.
    private func walkSortIndex(
        prefix: [UInt8], from lower: [UInt8], to upper: [UInt8]?, sort: QuerySort, candidates: NameSet?,
        _ zone: ZoneID, _ zoneKey: [UInt8], _ rest: Residual, _ hints: inout RecordDecodeHints,
        _ body: (Candidate, [UInt8]) throws -> Bool
    ) throws {
        // Records already taken at one element of a list (the only records found twice).
        var seen = Set<String>()
        try txn.scan(views.tables.fieldIndex, from: lower, to: upper, reverse: !sort.ascending) { key, _ in
            let suffix = UnsafeRawBufferPointer(rebasing: key[prefix.count...])
            guard suffix.first != OrderedEncoding.Kind.exactString.rawValue,
                let valueLength = IndexKeys.valueLength(suffix)
            else { return true }
            // Most entries of a filtered walk are not candidates: they are checked on
            // the key's bytes, and only a candidate's name and value are copied out.
            if let candidates, !candidates.contains(utf8: UnsafeRawBufferPointer(rebasing: suffix[valueLength...])) {
                return true
            }
            guard let split = IndexKeys.splitValue(suffix) else { return true }
            guard seen.isEmpty || !seen.contains(split.name) else { return true }
            var candidate = try load(split.name, zone, zoneKey, rest, &hints)
            // A scalar has one ordered entry in the index (a QUERYABLE string's exact
            // entry was skipped above), and this is it: its value is the record's sort
            // value by construction, so it is not computed again (that and the set of
            // names seen were 12 % of a sorted page's walk). A list has an entry per
            // element and sorts by its first in the sort's direction; whether it is one
            // is read from the bytes, so a scalar's record is never decoded here.
            switch candidate {
            case .match(var found):
                if try Self.isList(sort.key, in: found) {
                    let record = try record(found)
                    guard SortPosition.sortValue(record, sort) == split.value else { return true }
                    seen.insert(split.name)
                    found.decoded = record
                    candidate = .match(found)
                }
            case .hidden(let record):
                if Self.isList(sort.key, in: record) {
                    guard SortPosition.sortValue(record, sort) == split.value else { return true }
                    seen.insert(split.name)
                }
            case .none:
                return true
            }
            return try body(candidate, split.value)
        }
    }

    /// Whether `record` holds a list under `key`; system fields never do.
    static func isList(_ key: QueryKey, in record: Record) -> Bool {
        guard case .field(let name) = key, case .list = record[name] else { return false }
        return true
    }

    /// ``isList(_:in:)`` for a record found, asked of its bytes unless it is decoded
    /// (an empty list's tag and every list's carry the list bit).
    static func isList(_ key: QueryKey, in found: Found) throws -> Bool {
        if let decoded = found.decoded { return isList(key, in: decoded) }
        guard case .field(let name) = key, let tag = try RecordReader.fieldTag(name, in: found.stored) else { return false }
        return tag & 0x40 != 0
    }

    /// The first sort key's encoded value in a position that has one (`0x01` ‖ value,
    /// inverted when descending), as the index stores it; `nil` otherwise.
    static func firstValue(of position: [UInt8], ascending: Bool) -> [UInt8]? {
        guard position.first == 0x01 else { return nil }
        var rest = Array(position.dropFirst())
        if !ascending { rest = rest.map { ~$0 } }
        return rest.withUnsafeBytes { buffer in IndexKeys.valueLength(buffer).map { Array(buffer[0..<$0]) } }
    }

    /// The index key a position (from this plan) was made at, to resume after it.
    private func resumeKey(_ position: [UInt8], prefix: [UInt8], ascending: Bool) -> [UInt8]? {
        guard position.first == 0x01 else { return nil }
        var rest = Array(position.dropFirst().dropLast(FeedKeys.length))
        if !ascending { rest = rest.map { ~$0 } }
        return rest.withUnsafeBytes { buffer -> [UInt8]? in
            guard let split = IndexKeys.splitValue(buffer) else { return nil }
            // What follows the value in a position is the escaped, terminated name.
            let escapedName = Array(buffer[split.value.count...])
            guard let name = Self.unescape(escapedName) else { return nil }
            return prefix + split.value + name
        }
    }

    static func unescape(_ escaped: [UInt8]) -> [UInt8]? {
        var result: [UInt8] = []
        var index = 0
        while index + 1 < escaped.count {
            if escaped[index] == 0 {
                if escaped[index + 1] == 0 { return result }
                result.append(0)
                index += 2
            } else {
                result.append(escaped[index])
                index += 1
            }
        }
        return nil
    }

    /// Most candidates an index walk reads and sorts itself instead of walking the
    /// sort field's index (at least twice the page).
    static let candidateSortLimit = 256

    /// Appends where `found` (named `name`, in `zone`) sits in `sort`'s order to
    /// `positions`. A one-key order on a field reads that one value from the record's
    /// bytes; any other decodes it.
    private func appendPosition(
        _ found: inout Found, name: String, zone: ZoneID, sort: [QuerySort], zoneKey: [UInt8], to positions: inout [UInt8]
    ) throws {
        if found.decoded == nil, sort.count == 1, sort[0].relativeLocation == nil, case .field(let field) = sort[0].key {
            let value = try RecordReader.fieldValue(field, in: found.stored, home: zone)
            return SortPosition.append(name: name, value: value, sort: sort[0], zoneKey: zoneKey, to: &positions)
        }
        let record = try record(found)
        found.decoded = record
        positions += SortPosition.of(record, sort: sort, zoneKey: zoneKey)
    }

    /// Reads every candidate, keeps the best page, sorted. `given`: the one zone's
    /// candidates and the filters they leave, when the caller found them already.
    private func collectAndSort(
        _ query: Query, zones: [ZoneID], after position: [UInt8]?, limit: Int, given: (NameSet, Residual)? = nil
    ) throws -> Page {
        // The best `keep` so far, sorted and cut back whenever twice as many gather:
        // O(page) memory and O(n log page) time whatever the number of matches. Their
        // positions lie back to back in one buffer (an array each was an allocation
        // for every candidate), rebuilt with the kept ones at each cut.
        let keep = limit + 1
        var positions: [UInt8] = []
        var best: [(found: Found, position: Range<Int>)] = []
        func cut() {
            positions.withUnsafeBytes { bytes in
                best.sort { bytes[$0.position].lexicographicallyPrecedes(bytes[$1.position]) }
            }
            if best.count > keep { best.removeLast(best.count - keep) }
            var kept: [UInt8] = []
            kept.reserveCapacity(positions.count)
            for index in best.indices {
                let start = kept.count
                kept += positions[best[index].position]
                best[index].position = start..<kept.count
            }
            positions = kept
        }
        var scanned = 0
        for zone in zones {
            let zoneKey = views.zoneKeys.zone(database, zone)
            let candidates = try given?.0 ?? finder(zone, zoneKey, query.recordType).candidates(for: query.filters)
            let names = try candidates?.names ?? views.recordNames(ofType: query.recordType, zoneKey: zoneKey, in: txn)
            let rest = given?.1 ?? residual(query, candidatesFromIndex: candidates != nil)
            var hints = RecordDecodeHints()
            for name in names {
                scanned += 1
                guard scanned <= collectScanLimit else {
                    throw CumulusError(
                        .limitExceeded,
                        "this query reads more than \(collectScanLimit) records per page: no index serves its order "
                            + "(it spans every zone, or sorts by distance or record name first); "
                            + "query one zone, or add a filter on an indexed field")
                }
                guard var found = try load(name, zone, zoneKey, rest, &hints).match else { continue }
                let start = positions.count
                try appendPosition(&found, name: name, zone: zone, sort: query.sort, zoneKey: zoneKey, to: &positions)
                if let position, !position.lexicographicallyPrecedes(positions[start...]) {
                    positions.removeSubrange(start...)
                    continue
                }
                best.append((found, start..<positions.count))
                if best.count >= 2 * keep { cut() }
            }
        }
        cut()
        var page = emptyPage
        page.more = best.count > limit
        var last: Range<Int>?
        for match in best.prefix(limit) {
            if page.isFull(limit) {
                page.more = true
                break
            }
            page.append(match.found)
            last = match.position
        }
        // Only the last record's position is kept: what the cursor resumes after.
        if let last { page.lastPosition = Array(positions[last]) }
        return page
    }
}
