import CumulusTestSupport
import Testing

@testable import CumulusStorage

@Suite("Big-endian keys")
struct BigEndianTests {
    @Test func encodingIsMostSignificantByteFirst() {
        #expect(BigEndian.bytes(UInt32(0x0102_0304)) == [1, 2, 3, 4])
        #expect(BigEndian.bytes(UInt64(1)) == [0, 0, 0, 0, 0, 0, 0, 1])
        #expect(BigEndian.bytes(UInt16(0xABCD)) == [0xAB, 0xCD])
    }

    @Test func decodingRoundTripsAndRefusesShortInput() {
        var generator = SeededGenerator(seed: 42)
        for _ in 0..<1000 {
            let value = UInt64.random(in: .min ... .max, using: &generator)
            #expect(BigEndian.decode(UInt64.self, from: BigEndian.bytes(value)) == value)
        }
        #expect(BigEndian.decode(UInt64.self, from: [1, 2, 3]) == nil)
        #expect(BigEndian.decode(UInt32.self, from: [9, 0, 0, 0, 5], at: 1) == 5)
        #expect(BigEndian.decode(UInt32.self, from: [0, 0, 0, 5], at: 1) == nil)
        #expect(BigEndian.decode(UInt32.self, from: [0, 0, 0, 5], at: -1) == nil)
    }

    @Test func byteOrderEqualsNumericOrderInLMDB() throws {
        try TemporaryDirectory.with("storage") { path in
            let env = try LMDBEnvironment(path: path)
            let table = try env.table("numbers")
            var generator = SeededGenerator(seed: 7)
            let numbers = (0..<2000).map { _ in UInt64.random(in: 0...UInt64.max, using: &generator) } + [0, 1, 255, 256, 65_535, 65_536, .max]
            try env.write { txn throws in
                for number in numbers { try txn.put(table, key: BigEndian.bytes(number), value: [UInt8]()) }
            }
            var scanned: [UInt64] = []
            try env.read { txn throws in
                try txn.scan(table) { key, _ in
                    scanned.append(BigEndian.decode(UInt64.self, from: key) ?? 0)
                    return true
                }
            }
            #expect(scanned == Array(Set(numbers)).sorted())
        }
    }

    @Test func keyBuilderConcatenatesComponents() {
        var builder = KeyBuilder()
        builder.append(UInt32(1))
        builder.append(bytes: [0xAA, 0xBB])
        #expect(builder.bytes == [0, 0, 0, 1, 0xAA, 0xBB])
        #expect(KeyBuilder().appending(UInt16(2)).appending(bytes: [9]).bytes == [0, 2, 9])
    }
}
