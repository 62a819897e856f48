import CumulusModel
import CumulusTestSupport
import Testing

@Suite("UTF-8 byte order")
struct UTF8OrderTests {
    @Test("20,000 random byte strings, many sharing long prefixes: compare agrees with lexicographic byte order")
    func compareAgreesWithLexicographicOrder() {
        var generator = SeededRandom(seed: 0x0C0_0014)
        for round in 0..<20_000 {
            // A shared prefix of 0–40 bytes, then short random tails from a small alphabet
            // (including 0x00 and 0xFF), so differences land in every byte of a word.
            let prefix = (0..<Int.random(in: 0...40, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let alphabet: [UInt8] = [0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF]
            func tail() -> [UInt8] {
                (0..<Int.random(in: 0...10, using: &generator)).map { _ in alphabet.randomElement(using: &generator) ?? 0 }
            }
            let left = prefix + tail()
            let right = prefix + tail()
            let expected = left == right ? 0 : (left.lexicographicallyPrecedes(right) ? -1 : 1)
            let actual = left.withUnsafeBytes { l in right.withUnsafeBytes { r in UTF8Order.compare(l, r) } }
            #expect(actual == expected, "round \(round): \(left) vs \(right)")
            if actual != expected { return }
        }
    }
}
