import CumulusLog
import CumulusModel

/// A record's place in a query's order, as bytes that compare the way the order
/// does, so "after the cursor" is one byte comparison whichever plan ran.
///
/// Per sort key: `0x01` then the value's ``OrderedEncoding`` (a list's first
/// element in the sort's direction; a distance for a location sort), its bytes
/// inverted when descending; or `0xFF` when the record lacks the key, so such
/// records come last either way. Then the record name (escaped, inverted when the
/// first sort key is descending) and the zone key, which make positions unique.
enum SortPosition {
    /// `firstValue`: the first key's value when the caller already knows it (an index
    /// walk found the record under it), so it is not computed from the record again.
    static func of(_ record: Record, sort: [QuerySort], zoneKey: [UInt8], firstValue: [UInt8]? = nil) -> [UInt8] {
        var bytes: [UInt8] = []
        for (index, descriptor) in sort.enumerated() {
            guard let value = (index == 0 ? firstValue : nil) ?? sortValue(record, descriptor) else {
                bytes.append(0xFF)
                continue
            }
            bytes.append(0x01)
            bytes.append(contentsOf: descriptor.ascending ? value : value.map { ~$0 })
        }
        appendName(record.recordID.recordName, descending: sort.first.map { !$0.ascending } ?? false, zoneKey: zoneKey, to: &bytes)
        return bytes
    }

    /// The position of a record named `name` that lacks every key of `sort` (with no
    /// sort, a name order's position), written over `bytes`: built from the name
    /// alone, so a candidate is compared with a cursor before it is read.
    static func named(_ name: String, lacking sort: [QuerySort], zoneKey: [UInt8], into bytes: inout [UInt8]) {
        bytes.removeAll(keepingCapacity: true)
        bytes.append(contentsOf: repeatElement(0xFF, count: sort.count))
        appendName(name, descending: sort.first.map { !$0.ascending } ?? false, zoneKey: zoneKey, to: &bytes)
    }

    /// Appends what makes a position unique: the escaped name, inverted when the
    /// first sort key is `descending`, then the zone key.
    private static func appendName(_ name: String, descending: Bool, zoneKey: [UInt8], to bytes: inout [UInt8]) {
        let start = bytes.count
        OrderedEncoding.appendEscaped(name.utf8, to: &bytes)
        if descending {
            for index in start..<bytes.count { bytes[index] = ~bytes[index] }
        }
        bytes.append(contentsOf: zoneKey)
    }

    /// Appends the position of the record named `name` in an order of one field,
    /// whose value in it is `value` (`nil`: it lacks the field): what
    /// ``of(_:sort:zoneKey:firstValue:)`` gives, from the one value a read of the
    /// record's bytes found, without the record. Positions of many candidates lie back
    /// to back in one buffer, none allocating; a scalar (nearly every sorted field) is
    /// encoded straight into it.
    static func append(name: String, value: FieldValue?, sort: QuerySort, zoneKey: [UInt8], to bytes: inout [UInt8]) {
        let start = bytes.count
        switch value {
        case .list, nil:
            if let encoded = sortValue(of: value?.scalars, sort) {
                bytes.append(0x01)
                bytes.append(contentsOf: encoded)
            } else {
                bytes.append(0xFF)
            }
        case let scalar?:
            bytes.append(0x01)
            if !OrderedEncoding.appendEncoded(scalar, to: &bytes) { bytes[start] = 0xFF }
        }
        if bytes[start] == 0x01, !sort.ascending {
            for index in (start + 1)..<bytes.count { bytes[index] = ~bytes[index] }
        }
        appendName(name, descending: !sort.ascending, zoneKey: zoneKey, to: &bytes)
    }

    /// The encoded value a record sorts by for one descriptor, or `nil` if it has none.
    static func sortValue(_ record: Record, _ descriptor: QuerySort) -> [UInt8]? {
        sortValue(of: QueryEvaluator.values(descriptor.key, in: record), descriptor)
    }

    /// The encoded value that `values` (a key's values in a record: a list's elements)
    /// sort by for one descriptor, or `nil` if there are none.
    static func sortValue(of values: [FieldValue]?, _ descriptor: QuerySort) -> [UInt8]? {
        guard let values, !values.isEmpty else { return nil }
        if let center = descriptor.relativeLocation {
            let distances = values.compactMap { value -> Double? in
                if case .location(let location) = value { return Geo.distance(location, center) }
                return nil
            }
            guard let nearest = descriptor.ascending ? distances.min() : distances.max() else { return nil }
            var bytes = [OrderedEncoding.Kind.double.rawValue]
            OrderedEncoding.appendDouble(nearest, to: &bytes)
            return bytes
        }
        let encoded = values.compactMap(OrderedEncoding.encoded)
        return descriptor.ascending
            ? encoded.min { $0.lexicographicallyPrecedes($1) }
            : encoded.max { $0.lexicographicallyPrecedes($1) }
    }
}
