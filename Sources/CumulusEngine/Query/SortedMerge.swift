/// Intersection, union and difference of two arrays sorted by the same three-way order, each
/// element once, by one merge walk: how a query combines index postings (names in
/// ``NameSet``, the union of words' records in ``TokenPostings``) without hashing.
enum SortedMerge {
    /// The elements in both, in order.
    static func intersection<Element>(_ left: [Element], _ right: [Element], by compare: (Element, Element) -> Int)
        -> [Element]
    {
        var result: [Element] = []
        var i = 0
        var j = 0
        while i < left.count && j < right.count {
            let order = compare(left[i], right[j])
            if order == 0 {
                result.append(left[i])
                i += 1
                j += 1
            } else if order < 0 {
                i += 1
            } else {
                j += 1
            }
        }
        return result
    }

    /// The elements of `left` not in `right`, in order.
    static func difference<Element>(_ left: [Element], _ right: [Element], by compare: (Element, Element) -> Int)
        -> [Element]
    {
        if left.isEmpty || right.isEmpty { return left }
        var result: [Element] = []
        result.reserveCapacity(left.count)
        var j = 0
        for element in left {
            while j < right.count && compare(right[j], element) < 0 { j += 1 }
            if j < right.count && compare(right[j], element) == 0 { continue }
            result.append(element)
        }
        return result
    }

    /// The elements in either, in order; an element in both is taken from `left`.
    static func union<Element>(_ left: [Element], _ right: [Element], by compare: (Element, Element) -> Int)
        -> [Element]
    {
        if left.isEmpty { return right }
        if right.isEmpty { return left }
        var result: [Element] = []
        result.reserveCapacity(max(left.count, right.count))
        var i = 0
        var j = 0
        while i < left.count || j < right.count {
            if j == right.count {
                result.append(contentsOf: left[i...])
                break
            }
            if i == left.count {
                result.append(contentsOf: right[j...])
                break
            }
            let order = compare(left[i], right[j])
            result.append(order <= 0 ? left[i] : right[j])
            if order <= 0 { i += 1 }
            if order >= 0 { j += 1 }
        }
        return result
    }
}
