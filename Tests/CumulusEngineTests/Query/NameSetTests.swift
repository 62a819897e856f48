import CumulusTestSupport
import Testing

@testable import CumulusEngine

@Suite("Candidate names merged in byte order")
struct NameSetTests {
    /// The reference answer: byte arrays in a Swift set, sorted by bytes.
    private func reference(_ names: some Sequence<String>) -> [[UInt8]] {
        Set(names.map { Array($0.utf8) }).sorted { $0.lexicographicallyPrecedes($1) }
    }

    @Test("2,000 random pairs: order, dedup, contains, intersection and union agree with sets of bytes")
    func agreesWithSetsOfBytes() {
        var generator = SeededRandom(seed: 0x0C0_0014)
        // Few distinct letters so collisions and shared prefixes are common; "é" in both
        // Unicode forms, which Swift calls equal strings but the views keep apart.
        let alphabet = ["a", "b", "Z", "0", "é", "e\u{301}", "\u{10FFFF}"]
        func name() -> String {
            (0..<Int.random(in: 0...4, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }.joined()
        }
        for round in 0..<2_000 {
            let left = (0..<Int.random(in: 0...30, using: &generator)).map { _ in name() }
            let right = (0..<Int.random(in: 0...30, using: &generator)).map { _ in name() }
            let a = NameSet(left)
            let b = NameSet(right)
            #expect(a.names.map { Array($0.utf8) } == reference(left), "round \(round): order")
            #expect(
                a.intersection(b).names.map { Array($0.utf8) }
                    == reference(left).filter { Set(reference(right)).contains($0) },
                "round \(round): intersection")
            #expect(a.union(b).names.map { Array($0.utf8) } == reference(left + right), "round \(round): union")
            for probe in right { #expect(a.contains(probe) == reference(left).contains(Array(probe.utf8))) }
        }
    }

    @Test("names already in byte order are kept as they are")
    func orderedInputIsKept() {
        let names = ["a", "ab", "b", "é"]
        #expect(NameSet(names).names == names)
        #expect(NameSet(["b", "a", "b"]).names == ["a", "b"])
        #expect(NameSet.empty.isEmpty && NameSet([]).count == 0)
    }
}
