import CumulusModel
import CumulusTestSupport
import Testing
@testable import CumulusViews

@Suite("Index keys")
struct IndexKeysTests {
    /// Token keys as they were first built: one per unique token `String`, then sorted.
    /// Keys written by older builds must be the keys built now, or a rebuild would
    /// leave entries nothing deletes.
    static func referenceTokenEntries(of record: Record, zoneKey: [UInt8]) -> [[UInt8]] {
        let prefix = IndexKeys.tokenPrefix(zoneKey, type: record.recordType)
        let name = Array(record.recordID.recordName.utf8)
        return IndexKeys.sortedUnique(
            Tokenizer.tokens(of: record).map { token in
                var key = prefix
                OrderedEncoding.appendEscaped(token.utf8, to: &key)
                return key + name
            })
    }

    @Test("token keys of 3,000 random records, some with long words of NUL bytes and cut characters, equal the keys built from the token set")
    func tokenEntriesAgree() {
        var random = RandomRecords(seed: 0x1DE5_0014)
        let schema = EffectiveSchema(.empty, environment: .development)
        let zoneKey = [UInt8](repeating: 7, count: 16)
        let long = [
            String(repeating: "\u{0}x", count: 150), String(repeating: "\u{0}", count: 129) + "a",
            String(repeating: "\u{0}", count: 129) + "b", String(repeating: "é", count: 70) + "z",
            String(repeating: "ab", count: 70) + " " + String(repeating: "ab", count: 71),
        ]
        for index in 0..<3_000 {
            var record = random.record()
            if index % 3 == 0 { record["longWords"] = .string(long.filter { _ in random.chance(0.6) }.joined(separator: " ")) }
            #expect(
                IndexKeys.tokenEntries(of: record, zoneKey: zoneKey, schema: schema)
                    == Self.referenceTokenEntries(of: record, zoneKey: zoneKey),
                "record \(index)")
        }
    }
}
