import CumulusTestSupport
import Testing
@testable import CumulusModel

@Suite("Ordered encoding")
struct OrderedEncodingTests {
    @Test("escaping contiguous bytes (the copy path) equals escaping them one by one, cut and NULs included, and keeps order")
    func escapingPaths() {
        var random = RandomRecords(seed: 0x0E5C_0014)
        func next(_ bound: Int) -> Int { random.int(0...bound - 1) }
        var encoded: [([UInt8], [UInt8])] = []
        for index in 0..<5_000 {
            let length = [next(8), 190 + next(20), next(260)][index % 3]
            let value = (0..<length).map { _ in UInt8(next(4) == 0 ? 0 : 1 + next(255)) }
            for terminate in [true, false] {
                var contiguous: [UInt8] = [9]
                var byteByByte: [UInt8] = [9]
                let cutContiguous = OrderedEncoding.appendEscaped(value, to: &contiguous, terminate: terminate)
                // A lazy map has no contiguous storage, so it takes the byte loop.
                let cutLoop = OrderedEncoding.appendEscaped(value.lazy.map { $0 }, to: &byteByByte, terminate: terminate)
                #expect(contiguous == byteByByte && cutContiguous == cutLoop, "value \(index), terminate \(terminate)")
                if terminate { encoded.append((value, contiguous)) }
            }
        }
        // Order-preserving, up to the cut (values equal in their first escaped bytes tie).
        for (a, b) in zip(encoded, encoded.dropFirst()) where a.1 != b.1 {
            #expect(a.0.lexicographicallyPrecedes(b.0) == a.1.lexicographicallyPrecedes(b.1))
        }
    }
}
