import CumulusModel
import Testing

/// ``HashedBytes``: a byte string as a dictionary key, equal exactly when the bytes are.
@Suite("HashedBytes")
struct HashedBytesTests {
    @Test("equal bytes are one key; a prefix, an extra zero or one changed byte is another")
    func keys() {
        let base: [UInt8] = Array(0..<16)
        var table: [HashedBytes: Int] = [:]
        table[HashedBytes(base)] = 1
        table[HashedBytes(base)] = 2
        table[HashedBytes(Array(base.prefix(15)))] = 3
        table[HashedBytes(base + [0])] = 4
        var changed = base
        changed[7] ^= 0x80
        table[HashedBytes(changed)] = 5
        table[HashedBytes([])] = 6
        #expect(table.count == 5)
        #expect(table[HashedBytes(Array(0..<16))] == 2)
        #expect(table[HashedBytes(base + [0])] == 4)
        #expect(table[HashedBytes(changed)] == 5)
        #expect(table[HashedBytes([])] == 6)
    }

    @Test("equal keys hash alike however their arrays were built")
    func hashing() {
        let a = HashedBytes(Array("zone-key-1234567".utf8))
        var built: [UInt8] = []
        built.reserveCapacity(64)
        built.append(contentsOf: "zone-key-".utf8)
        built.append(contentsOf: "1234567".utf8)
        let b = HashedBytes(built)
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        #expect(Set([a, b]).count == 1)
    }
}
