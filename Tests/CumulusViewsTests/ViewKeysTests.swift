import Crypto
import Testing
@testable import CumulusViews

@Suite("View keys")
struct ViewKeysTests {
    /// Keys already on disk must be the keys built now: the layouts of
    /// `ViewKeys`'s own notes, spelled out here independently of how they are built.
    @Test("record, target and by-type keys keep their stored layout, for ASCII and non-ASCII names and types")
    func layouts() {
        let zoneKey = (0..<16).map { UInt8($0 * 7 + 3) }
        for (type, name) in [("TodoItem", "item-1"), ("Ünïcödé", "名前-🙂"), ("T", ""), ("x", String(repeating: "n", count: 255))] {
            let typeHash = Array(SHA256.hash(data: Array(type.utf8)).prefix(8))
            #expect(ViewKeys.record(zoneKey, name) == zoneKey + Array(name.utf8))
            #expect(ViewKeys.target(zoneKey, name) == zoneKey + Array(name.utf8))
            #expect(ViewKeys.typePrefix(zoneKey, type) == zoneKey + typeHash)
            #expect(ViewKeys.byType(zoneKey, type, name) == zoneKey + typeHash + Array(name.utf8))
            let built = ViewKeys.withRecordKey(zoneKey, name) { Array($0) }
            #expect(built == ViewKeys.record(zoneKey, name))
        }
    }
}
