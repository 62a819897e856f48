import CumulusModel

/// Record names in UTF-8 byte order without repeats: a query's candidates from one
/// or more indexes, combined by merging instead of hashing.
///
/// Index scans yield names already in this order (an equality or token key is its
/// prefix followed by the name), so the common cases — intersecting two filters'
/// postings, reading candidates in name order — need no hashing of strings and no
/// sort. Equality is byte equality, as the views' keys are: two names that differ
/// in bytes are two records even when Swift calls them equal strings.
struct NameSet: Sendable {
    /// The names, ascending by UTF-8 bytes, each once.
    private(set) var names: [String]

    /// No names.
    static let empty = NameSet(ordered: [])

    /// `names` in byte order without repeats: kept as they are when they already are
    /// (an index scan's output), sorted and deduplicated otherwise.
    init(_ names: [String]) {
        var ordered = true
        for index in names.indices.dropFirst() where UTF8Order.compare(names[index - 1], names[index]) >= 0 {
            ordered = false
            break
        }
        if ordered {
            self.names = names
            return
        }
        self.names = UTF8Order.sorted(names, uniqueBy: UTF8Order.compare)
    }

    private init(ordered names: [String]) {
        self.names = names
    }

    var isEmpty: Bool { names.isEmpty }
    var count: Int { names.count }

    /// Whether `name` is one of the names (binary search).
    func contains(_ name: String) -> Bool {
        var low = 0
        var high = names.count
        while low < high {
            let middle = (low + high) / 2
            let order = UTF8Order.compare(names[middle], name)
            if order == 0 { return true }
            if order < 0 { low = middle + 1 } else { high = middle }
        }
        return false
    }

    /// Whether the name whose UTF-8 bytes are `name` is one of the names: for a walk
    /// over index keys, which checks each key's name without building a string of it.
    func contains(utf8 name: UnsafeRawBufferPointer) -> Bool {
        var low = 0
        var high = names.count
        while low < high {
            let middle = (low + high) / 2
            var stored = names[middle]
            let order = stored.withUTF8 { UTF8Order.compare(UnsafeRawBufferPointer($0), name) }
            if order == 0 { return true }
            if order < 0 { low = middle + 1 } else { high = middle }
        }
        return false
    }

    /// The names in both, by one merge walk.
    func intersection(_ other: NameSet) -> NameSet {
        NameSet(ordered: SortedMerge.intersection(names, other.names, by: UTF8Order.compare))
    }

    /// The names in either, by one merge walk.
    func union(_ other: NameSet) -> NameSet {
        NameSet(ordered: SortedMerge.union(names, other.names, by: UTF8Order.compare))
    }

    /// The names not in `other`, by one merge walk.
    func subtracting(_ other: NameSet) -> NameSet {
        NameSet(ordered: SortedMerge.difference(names, other.names, by: UTF8Order.compare))
    }
}
