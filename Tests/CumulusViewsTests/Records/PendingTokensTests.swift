import CumulusModel
import CumulusTestSupport
import Testing
@testable import CumulusViews

@Suite("Pending token entries")
struct PendingTokensTests {
    /// The keys a merge writes for a new record's entry, as ``PendingTokens/Side`` builds them.
    static func keysFromSide(_ entry: [UInt8], recordKey: [UInt8]) -> [[UInt8]]? {
        guard let sides = PendingTokens.sides(entry), sides.indexed.tokens.isEmpty else { return nil }
        var keys: [[UInt8]] = []
        sides.current.forEachIndexKey(zoneKey: recordKey.prefix(16), name: recordKey.dropFirst(16)) { keys.append($0) }
        return keys
    }

    /// The keys a merge builds for the entry straight from its stored bytes (its sides
    /// split by ``PendingTokens/sideBytes(_:)``, a new record's current side's keys by
    /// ``PendingTokens/forEachIndexKey(ofSide:zoneKey:name:building:_:)``), or `nil` when
    /// the bytes are not a new record's entry under a record key with a name.
    static func keysFromBytes(_ entry: [UInt8], recordKey: [UInt8]) -> [[UInt8]]? {
        guard recordKey.count > 16 else { return nil }
        var keys: [[UInt8]] = []
        var buffer: [UInt8] = []
        let taken = entry.withUnsafeBytes { entry in
            guard let (indexed, current) = PendingTokens.sideBytes(entry),
                indexed.elementsEqual(PendingTokens.emptySide)
            else { return false }
            return PendingTokens.forEachIndexKey(
                ofSide: current, zoneKey: recordKey.prefix(16), name: recordKey.dropFirst(16), building: &buffer
            ) { keys.append($0) }
        }
        return taken ? keys : nil
    }

    @Test("a new record's keys built from its stored entry equal the keys its parsed side gives, for 2,000 random records")
    func newRecordKeysAgree() {
        var random = RandomRecords(seed: 0x70CE_0017)
        let schema = EffectiveSchema(.empty, environment: .development)
        let empty = PendingTokens.side(of: nil, schema: schema)
        var taken = 0
        for index in 0..<2_000 {
            let record = random.record()
            let current = PendingTokens.side(of: record, schema: schema)
            let entry = PendingTokens.entry(indexed: empty, current: current)
            let recordKey = [UInt8](repeating: UInt8(index % 251), count: 16) + Array(record.recordID.recordName.utf8)
            let expected = Self.keysFromSide(entry, recordKey: recordKey)
            let built = Self.keysFromBytes(entry, recordKey: recordKey)
            if current.count > 4 {
                #expect(built != nil, "record \(index)")
                taken += 1
            }
            // Declined entries (no tokens) are left to the general path, which writes nothing for them.
            #expect(built == nil || built == expected, "record \(index)")
        }
        #expect(taken > 500)
    }

    @Test("an edited record's entry, and every cut or reordered entry, is declined and left to the parsing path")
    func othersDeclined() throws {
        var random = RandomRecords(seed: 0x70CE_0018)
        let schema = EffectiveSchema(.empty, environment: .development)
        var record = random.record()
        record["text"] = .string("alpha beta gamma delta")
        let side = PendingTokens.side(of: record, schema: schema)
        let recordKey = [UInt8](repeating: 3, count: 16) + Array("name".utf8)
        // Edited: an indexed side with tokens (its keys must be deleted too).
        #expect(Self.keysFromBytes(PendingTokens.entry(indexed: side, current: side), recordKey: recordKey) == nil)
        let entry = PendingTokens.entry(indexed: PendingTokens.side(of: nil, schema: schema), current: side)
        #expect(Self.keysFromBytes(entry, recordKey: recordKey) != nil)
        // A record key with no name, and every truncation of the entry.
        #expect(Self.keysFromBytes(entry, recordKey: Array(recordKey.prefix(16))) == nil)
        for length in 0..<entry.count {
            #expect(Self.keysFromBytes(Array(entry.prefix(length)), recordKey: recordKey) == nil, "cut at \(length)")
        }
        // Tokens out of order: the two first tokens swapped, lengths unchanged.
        let tokensStart = 4 + 4 + 16
        let first = try #require(Self.tokenEnd(in: entry, from: tokensStart))
        let second = try #require(Self.tokenEnd(in: entry, from: first))
        var swapped = entry
        swapped.replaceSubrange(tokensStart..<second, with: Array(entry[first..<second]) + Array(entry[tokensStart..<first]))
        #expect(PendingTokens.sides(swapped) == nil)
        #expect(Self.keysFromBytes(swapped, recordKey: recordKey) == nil)
        // A repeated token.
        var repeated = entry
        repeated.replaceSubrange(first..<second, with: Array(entry[tokensStart..<first]))
        let lengthOffset = 4
        let newLength = repeated.count - 8
        for index in 0..<4 { repeated[lengthOffset + index] = UInt8(truncatingIfNeeded: newLength >> (8 * (3 - index))) }
        #expect(PendingTokens.sides(repeated) == nil)
        #expect(Self.keysFromBytes(repeated, recordKey: recordKey) == nil)
    }

    /// Where the escaped token starting at `start` ends (past its 00 00).
    static func tokenEnd(in entry: [UInt8], from start: Int) -> Int? {
        var index = start
        while index + 1 < entry.count {
            if entry[index] == 0 {
                if entry[index + 1] == 0 { return index + 2 }
                index += 2
            } else {
                index += 1
            }
        }
        return nil
    }
}
