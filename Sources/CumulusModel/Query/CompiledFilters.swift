/// A query's filters on user fields, compiled once per query and evaluated on a
/// stored record's bytes (``RecordCodec``'s layout) in one walk over its fields.
///
/// What compiling settles once instead of per record: each filter's field key as
/// bytes, the filters in the order a record stores its fields (ascending UTF-8), the
/// query's string folded for comparisons, and what each comparator asks of the
/// field's elements (some passes, none passes, or the whole value). Evaluating then
/// touches each field of the record once, whatever the number of filters: a field no
/// filter names is skipped by its length, and a filter's elements are compared where
/// they lie. Numbers, dates and ASCII strings are compared without building a value or
/// a string; other elements are decoded one at a time and compared by
/// ``QueryEvaluator``, and a comparator on the whole value (list equality, `NEAR`,
/// `LIST_CONTAINS_ALL`) decodes that one value.
///
/// The result is exactly ``QueryEvaluator/matches(fieldValue:_:)`` for each filter,
/// ANDed; `CompiledFiltersTests` holds it to that over every comparator and kind of
/// value. Token filters and system-field keys are not compiled
/// (``canCompile(_:)``): they need the record's tokens or header.
///
/// Lifetime: a ``CompiledFilters`` owns its bytes and is `Sendable`; what
/// ``matches(_:home:)`` reads is borrowed only for the call.
public struct CompiledFilters: Sendable {
    /// What a filter asks of the elements of the field's value (a scalar is one
    /// element; a record without the field has none).
    enum Mode: Sendable {
        /// Some element passes the test.
        case some(Test)
        /// No element passes the test.
        case none(Test)
        /// The evaluator decides on the whole decoded value.
        case whole
    }

    /// What one element is tested for against the filter's value.
    enum Test: Sendable {
        case equal, less, lessOrEqual, greater, greaterOrEqual, beginsWith, member
    }

    /// One filter, compiled.
    struct Compiled: Sendable {
        let filter: QueryFilter
        /// The field's key, as stored.
        let key: [UInt8]
        let mode: Mode
        /// The filter's string as comparisons see it (folded), or as a prefix is
        /// matched (exact); `nil` when the filter's value is not a string.
        let folded: [UInt8]?
        let exact: [UInt8]?
        /// The filter's elements, for membership without a ``MemberSet``.
        let members: [FieldValue]
    }

    /// The filters in stored field order (stable: filters on one key keep theirs).
    let filters: [Compiled]

    /// Whether `filter` can be compiled: a filter on a user field that is not a token search.
    public static func canCompile(_ filter: QueryFilter) -> Bool {
        guard case .field = filter.key else { return false }
        return filter.comparator != .containsAllTokens && filter.comparator != .containsAnyTokens
    }

    /// Compiles `filters`, each of which ``canCompile(_:)``; `nil` when one cannot be.
    public init?(_ filters: [QueryFilter]) {
        var compiled: [Compiled] = []
        compiled.reserveCapacity(filters.count)
        for filter in filters {
            guard Self.canCompile(filter), case .field(let name) = filter.key else { return nil }
            var text: String? = nil
            if case .string(let string) = filter.value { text = string }
            compiled.append(
                Compiled(
                    filter: filter, key: Array(name.utf8), mode: Self.mode(of: filter),
                    folded: text.map { Array(TextFolding.caseFolded($0).utf8) }, exact: text.map { Array($0.utf8) },
                    members: filter.comparator.testsMembership ? filter.value.scalars : []))
        }
        // Stable, so that the first failing filter is the same one whatever the order.
        self.filters = compiled.enumerated().sorted { a, b in
            let order = a.element.key.withUnsafeBytes { x in b.element.key.withUnsafeBytes { y in UTF8Order.compare(x, y) } }
            return order != 0 ? order < 0 : a.offset < b.offset
        }.map(\.element)
    }

    /// What `filter`'s comparator asks of the elements (``QueryEvaluator``'s table).
    static func mode(of filter: QueryFilter) -> Mode {
        switch filter.comparator {
        case .equals:
            if case .list = filter.value { return .whole }
            return .some(.equal)
        case .notEquals: return .none(.equal)
        case .lessThan: return .some(.less)
        case .lessThanOrEquals: return .some(.lessOrEqual)
        case .greaterThan: return .some(.greater)
        case .greaterThanOrEquals: return .some(.greaterOrEqual)
        case .in, .listContainsAny: return .some(.member)
        case .notIn, .notListContainsAny: return .none(.member)
        case .listContains: return .some(.equal)
        case .notListContains: return .none(.equal)
        case .beginsWith, .listMemberBeginsWith: return .some(.beginsWith)
        case .notBeginsWith, .notListMemberBeginsWith: return .none(.beginsWith)
        case .near, .listContainsAll, .notListContainsAll, .containsAllTokens, .containsAnyTokens: return .whole
        }
    }

    /// Whether the stored record `stored` (whose zone is `home`) passes every filter.
    /// Damaged bytes are an error, not a record that fails to match.
    public func matches(_ stored: UnsafeRawBufferPointer, home: ZoneID) throws -> Bool {
        guard !filters.isEmpty else { return true }
        var reader = BinaryReader(stored, context: "record")
        let count = try RecordReader.seekFields(&reader)
        var next = 0
        for _ in 0..<count {
            let key = try reader.rawSlice(reader.length())
            // Filters on keys before this one name fields the record does not have.
            while next < filters.count {
                let order = filters[next].key.withUnsafeBytes { UTF8Order.compare($0, key) }
                if order > 0 { break }
                if order < 0 {
                    guard Self.absent(filters[next]) else { return false }
                } else {
                    // Each filter on this key reads the value from its start.
                    var copy = reader
                    guard try Self.present(filters[next], &copy, home) else { return false }
                }
                next += 1
            }
            if next == filters.count { return true }
            try RecordReader.skipValue(&reader)
        }
        while next < filters.count {
            guard Self.absent(filters[next]) else { return false }
            next += 1
        }
        return true
    }

    /// Whether a record without the field passes `compiled`: it has no elements.
    static func absent(_ compiled: Compiled) -> Bool {
        switch compiled.mode {
        case .some: false
        case .none: true
        case .whole: QueryEvaluator.matches(fieldValue: nil, compiled.filter)
        }
    }

    /// Whether the value at `reader` passes `compiled`.
    static func present(_ compiled: Compiled, _ reader: inout BinaryReader, _ home: ZoneID) throws -> Bool {
        switch compiled.mode {
        case .whole:
            QueryEvaluator.matches(fieldValue: try RecordCodec.readValue(home: home, from: &reader), compiled.filter)
        case .some(let test): try anyElement(compiled, test, &reader, home)
        case .none(let test): try !anyElement(compiled, test, &reader, home)
        }
    }

    /// Whether some element of the value at `reader` passes `test`.
    static func anyElement(_ compiled: Compiled, _ test: Test, _ reader: inout BinaryReader, _ home: ZoneID)
        throws -> Bool
    {
        let tag = try reader.u8()
        if tag == RecordCodec.emptyListTag { return false }
        var count = 1
        var typeTag = tag
        if tag & RecordCodec.listFlag != 0 {
            typeTag = tag & ~RecordCodec.listFlag
            count = try reader.length()
            guard count > 0 else { throw reader.failure("empty list written with an element type") }
        }
        guard let type = FieldValue.ValueType(rawValue: typeTag) else { throw reader.failure("unknown value type \(tag)") }
        for done in 1...count where try element(compiled, test, type, &reader, home) {
            // Answered, but the rest of the value is still checked as a full decode of
            // it would check it: damage anywhere in the value the filter read is an
            // error, not a match.
            for _ in done..<count { try RecordReader.skipScalar(type, &reader, checking: home) }
            return true
        }
        return false
    }

    /// Whether the element of `type` at `reader` passes `test`; moves `reader` past it.
    static func element(
        _ compiled: Compiled, _ test: Test, _ type: FieldValue.ValueType, _ reader: inout BinaryReader, _ home: ZoneID
    ) throws -> Bool {
        if type == .string, test != .member, let folded = compiled.folded, let exact = compiled.exact {
            let bytes = try reader.rawSlice(reader.length())
            if let answer = Self.asciiString(bytes, test, folded: folded, exact: exact) { return answer }
            guard BinaryReader.isWellFormedUTF8(bytes) else { throw reader.notUTF8() }
            return Self.passes(.string(String(decoding: bytes, as: UTF8.self)), test, compiled)
        }
        return Self.passes(try RecordCodec.readScalar(type, home: home, from: &reader), test, compiled)
    }

    /// `test` of the stored string `bytes` against a string filter, when `bytes` is
    /// all ASCII (where folding is lower-casing byte by byte, and the bytes are valid
    /// UTF-8 as they stand); `nil` otherwise, for the evaluator to decide on the checked
    /// string, so that damaged bytes are an error here as they are there.
    static func asciiString(_ bytes: UnsafeRawBufferPointer, _ test: Test, folded: [UInt8], exact: [UInt8]) -> Bool? {
        guard BinaryReader.isASCII(bytes) else { return nil }
        if test == .beginsWith {
            guard bytes.count >= exact.count else { return false }
            for index in 0..<exact.count where bytes[index] != exact[index] { return false }
            return true
        }
        var order = 0
        let shared = min(bytes.count, folded.count)
        var index = 0
        while index < shared {
            var byte = bytes[index]
            if byte >= 0x41 && byte <= 0x5A { byte |= 0x20 }
            if byte != folded[index] {
                order = byte < folded[index] ? -1 : 1
                break
            }
            index += 1
        }
        if order == 0 { order = bytes.count == folded.count ? 0 : (bytes.count < folded.count ? -1 : 1) }
        switch test {
        case .equal: return order == 0
        case .less: return order < 0
        case .lessOrEqual: return order <= 0
        case .greater: return order > 0
        case .greaterOrEqual: return order >= 0
        case .beginsWith, .member: return nil
        }
    }

    /// `test` of one decoded element, as ``QueryEvaluator`` decides it.
    static func passes(_ element: FieldValue, _ test: Test, _ compiled: Compiled) -> Bool {
        let value = compiled.filter.value
        switch test {
        case .equal: return QueryEvaluator.equal(element, value)
        case .less: return QueryEvaluator.compare(element, value).map { $0 < 0 } ?? false
        case .lessOrEqual: return QueryEvaluator.compare(element, value).map { $0 <= 0 } ?? false
        case .greater: return QueryEvaluator.compare(element, value).map { $0 > 0 } ?? false
        case .greaterOrEqual: return QueryEvaluator.compare(element, value).map { $0 >= 0 } ?? false
        case .beginsWith: return QueryEvaluator.beginsWith(element, value)
        case .member: return QueryEvaluator.isMember(element, compiled.filter, compiled.members)
        }
    }
}
