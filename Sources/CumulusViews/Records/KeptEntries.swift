import CumulusModel
import CumulusStorage

/// What a record's `byType` entry keeps of its index entries: its token side
/// (``PendingTokens``) and its field-index keys, each cut to the part that differs
/// between records of one type in one zone.
///
/// An update, a delete and a cascade remove a record's old entries from what was kept
/// here, instead of decoding its old version's indexed fields and building their keys
/// again (in a cascade's profile, 14 % of the writer's samples, on top of the words a
/// side already spared): as FTS5 needs the old text to delete a row's entries, this is
/// that text, cut. A delete needs no schema at all; a schema change that reindexes a
/// type rewrites what its records keep (``Views/reindexEntries(of:to:zoneKey:_:)``).
///
/// Layout (the `byType` value, ``ViewTables/byType``):
/// ```
/// empty                                   the record has no token and no field entry
/// side ‖ n × (fieldHash(8) ‖ value)       otherwise
/// ```
/// `side` is a ``PendingTokens`` side, length field included (`00 00 00 00` for a
/// record without a SEARCHABLE word). A field key is zoneKey ‖ typeHash ‖ fieldHash ‖
/// value ‖ record name (``IndexKeys``); the zone, type and name are the `byType` key's
/// own, so each key keeps only fieldHash ‖ value, whose end its encoding marks
/// (``IndexKeys/valueLength(_:)``). The parts are in key order, each once, so the keys
/// rebuilt from them are sorted and unique as ``IndexKeys/fieldEntries(of:zoneKey:schema:user:system:)``'s.
struct KeptEntries: Equatable {
    /// The stored value.
    let value: [UInt8]
    /// Where the token side ends in ``value`` (the field parts follow).
    private let sideEnd: Int
    /// Where each field part starts and ends in ``value``, in order.
    private let fieldParts: [Range<Int>]

    /// Bytes of a field key's field hash.
    static let fieldHashBytes = 8

    /// What a record without a stored version keeps: nothing.
    static let none = KeptEntries(checked: [], sideEnd: 0, fieldParts: [])

    private init(checked value: [UInt8], sideEnd: Int, fieldParts: [Range<Int>]) {
        self.value = value
        self.sideEnd = sideEnd
        self.fieldParts = fieldParts
    }

    /// Reads a stored value; `nil` if malformed.
    init?(_ value: [UInt8]) {
        guard !value.isEmpty else {
            self = .none
            return
        }
        guard let sideEnd = value.withUnsafeBytes({ PendingTokens.sideLength($0) }) else { return nil }
        var parts: [Range<Int>] = []
        let found: Bool = value.withUnsafeBytes { bytes in
            var start = sideEnd
            while start < bytes.count {
                let valueStart = start + Self.fieldHashBytes
                guard valueStart < bytes.count,
                    let length = IndexKeys.valueLength(UnsafeRawBufferPointer(rebasing: bytes[valueStart...]))
                else { return false }
                parts.append(start..<valueStart + length)
                start = valueStart + length
            }
            return true
        }
        // A side alone is written as an empty value (``value(side:fieldKeys:prefixLength:nameLength:)``).
        guard found, !(parts.isEmpty && PendingTokens.isEmpty(Array(value[..<sideEnd]))) else { return nil }
        self.init(checked: value, sideEnd: sideEnd, fieldParts: parts)
    }

    /// The token side kept: what `tokenIndex` holds for the record once merged.
    var side: [UInt8] {
        sideEnd == 0 ? PendingTokens.emptySide : Array(value[..<sideEnd])
    }

    /// Whether the record keeps no field key.
    var hasNoFieldKeys: Bool { fieldParts.isEmpty }

    /// The value to keep for a record whose token side is `side` and whose field-index
    /// keys are `fieldKeys` (sorted and unique, each `prefixLength` bytes of zone key
    /// and type hash, then its part, then a name of `nameLength` bytes).
    static func value(side: [UInt8], fieldKeys: [[UInt8]], prefixLength: Int, nameLength: Int) -> [UInt8] {
        guard !fieldKeys.isEmpty else { return PendingTokens.isEmpty(side) ? [] : side }
        var value = side
        value.reserveCapacity(side.count + fieldKeys.reduce(0) { $0 + $1.count - prefixLength - nameLength })
        for key in fieldKeys { value.append(contentsOf: key[prefixLength..<key.count - nameLength]) }
        return value
    }

    /// Calls `body` with each field-index key kept, in key order, built in one reused
    /// buffer from `prefix` (zone key ‖ type hash, as the record's `byType` key starts)
    /// and `name`.
    func forEachFieldKey(prefix: some Collection<UInt8>, name: some Collection<UInt8>, _ body: ([UInt8]) throws -> Void)
        rethrows
    {
        guard !fieldParts.isEmpty else { return }
        var key: [UInt8] = []
        key.reserveCapacity(prefix.count + 32 + name.count)
        key.append(contentsOf: prefix)
        let start = key.count
        for part in fieldParts {
            key.removeLast(key.count - start)
            key.append(contentsOf: value[part])
            key.append(contentsOf: name)
            try body(key)
        }
    }

    /// The field-index keys kept, sorted and unique (see ``forEachFieldKey(prefix:name:_:)``).
    func fieldKeys(prefix: some Collection<UInt8>, name: some Collection<UInt8>) -> [[UInt8]] {
        var keys: [[UInt8]] = []
        keys.reserveCapacity(fieldParts.count)
        forEachFieldKey(prefix: prefix, name: name) { keys.append($0) }
        return keys
    }
}
