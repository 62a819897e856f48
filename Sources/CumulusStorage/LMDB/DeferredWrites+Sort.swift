#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The order deferred writes are written in: LMDB's order of their keys, equal keys in
/// order of arrival (the last of a run is the one that stands).
extension DeferredWrites {
    /// How many leading bytes every key of `operations` shares with the first.
    static func sharedPrefix(_ operations: UnsafeMutableBufferPointer<Operation>, _ base: UnsafePointer<UInt8>) -> Int {
        guard let first = operations.first else { return 0 }
        var shared = Int(first.length)
        for operation in operations.dropFirst() where shared > 0 {
            let limit = min(shared, Int(operation.length))
            var index = 0
            while index < limit, base[Int(first.start) + index] == base[Int(operation.start) + index] { index += 1 }
            shared = index
        }
        return shared
    }

    /// Orders `operations` as LMDB orders their keys, equal keys in order of arrival.
    static func sort(_ operations: UnsafeMutableBufferPointer<Operation>, _ base: UnsafePointer<UInt8>) {
        // Index keys of one table share their zone and type prefix: order by the
        // sixteen bytes after what all share, and compare the rest only on a tie.
        let shared = sharedPrefix(operations, base)
        func word(_ start: Int, _ end: Int) -> UInt64 {
            var value: UInt64 = 0
            var shift: UInt64 = 56
            var position = start
            while position < end {
                value |= UInt64(base[position]) << shift
                shift &-= 8
                position += 1
            }
            return value
        }
        for index in operations.indices {
            let start = Int(operations[index].start) + shared
            let end = Int(operations[index].start) + Int(operations[index].length)
            operations[index].head = word(start, min(end, start + 8))
            operations[index].head2 = word(min(end, start + 8), min(end, start + 16))
        }
        // Past the heads, LMDB's default order: memcmp over the shorter length, then
        // the shorter first (a key that ends within its heads is a prefix of the
        // other). Equal keys keep their order of arrival (the offsets grow with
        // it), so the last of a run is the operation that wins. A zero-padded head
        // ties with a real zero byte; the full compare decides.
        let past = shared + 16
        func precedes(_ a: Operation, _ b: Operation) -> Bool {
            if a.head != b.head { return a.head < b.head }
            if a.head2 != b.head2 { return a.head2 < b.head2 }
            // Equal heads: the first `past` bytes are equal as far as both keys go.
            let common = Int(min(a.length, b.length)) - past
            if common > 0 {
                let order = memcmp(base + Int(a.start) + past, base + Int(b.start) + past, common)
                if order != 0 { return order < 0 }
            }
            if a.length != b.length { return a.length < b.length }
            return a.start < b.start
        }
        guard operations.count >= radixMinimum else {
            var operations = operations  // the buffer's view; the elements sort in place
            operations.sort(by: precedes)
            return
        }
        // Distributed by the heads' bytes first (a most-significant-digit radix sort),
        // small buckets and equal heads then sorted by comparison: a comparison sort of
        // a cascade's 70,000 keys per flush was two thirds of writing them.
        withUnsafeTemporaryAllocation(of: Operation.self, capacity: operations.count) { scratch in
            radixSort(operations, scratch, digit: 0, precedes)
        }
    }

    /// Buckets below this size are sorted by comparison.
    static let radixMinimum = 64

    /// Sorts `operations` (whose heads agree on their first `digit` bytes) by their
    /// heads' remaining bytes, a byte at a time, then by `precedes`; `scratch` is as
    /// large as `operations`. Each pass keeps the order within a bucket, so equal
    /// heads stay in order of arrival for the comparison that decides them.
    private static func radixSort(
        _ operations: UnsafeMutableBufferPointer<Operation>, _ scratch: UnsafeMutableBufferPointer<Operation>,
        digit: Int, _ precedes: (Operation, Operation) -> Bool
    ) {
        var operations = operations
        var digit = digit
        func byte(_ operation: Operation) -> Int {
            digit < 8
                ? Int(truncatingIfNeeded: operation.head >> UInt64(56 - 8 * digit)) & 0xFF
                : Int(truncatingIfNeeded: operation.head2 >> UInt64(56 - 8 * (digit - 8))) & 0xFF
        }
        withUnsafeTemporaryAllocation(of: Int.self, capacity: 257) { counts in
            while true {
                guard operations.count >= radixMinimum, digit < 16 else {
                    operations.sort(by: precedes)
                    return
                }
                // Past the bytes every head here shares, found in one pass (keys of one
                // word share it, and often their creation time's first bytes).
                let first = operations[0]
                var differ: UInt64 = 0
                var differ2: UInt64 = 0
                for operation in operations {
                    differ |= operation.head ^ first.head
                    differ2 |= operation.head2 ^ first.head2
                }
                let shared = differ != 0 ? differ.leadingZeroBitCount / 8 : 8 + differ2.leadingZeroBitCount / 8
                if shared > digit {
                    digit = shared
                    continue
                }
                counts.initialize(repeating: 0)
                for operation in operations { counts[byte(operation) + 1] += 1 }
                for index in 1...256 { counts[index] += counts[index - 1] }
                // counts[b] is now where bucket b starts; scatter in arrival order.
                for operation in operations {
                    let bucket = byte(operation)
                    scratch[counts[bucket]] = operation
                    counts[bucket] += 1
                }
                _ = operations.update(fromContentsOf: scratch[..<operations.count])
                // counts[b] is now where bucket b ends.
                var start = 0
                for bucket in 0..<256 {
                    let end = counts[bucket]
                    if end - start > 1 {
                        radixSort(
                            UnsafeMutableBufferPointer(rebasing: operations[start..<end]),
                            UnsafeMutableBufferPointer(rebasing: scratch[start..<end]), digit: digit + 1, precedes)
                    }
                    start = end
                }
                return
            }
        }
    }
}
