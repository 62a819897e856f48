import CumulusModel
import CumulusStorage
import Testing
@testable import CumulusViews

@Suite("Replacing a record's references")
struct ReplaceReferencesTests {
    @Test("old and new lists out of order or holding repeats leave exactly the new list's edges, in both directions")
    func repeatsAndDisorder() throws {
        let node = try RecordDerivationTests.Node("references")
        defer { node.remove() }
        let views = node.views
        let zoneKey = [UInt8](repeating: 9, count: 16)
        let a = OutgoingReference(targetName: "a", action: .deleteSelf)
        let b = OutgoingReference(targetName: "b", action: .none)
        let c = OutgoingReference(targetName: "c", action: .deleteSelf)
        func edges() throws -> (out: [OutgoingReference], into: [String: Bool]) {
            try node.store.environment.read { txn in
                let out = try views.outgoing(zoneKey, "source", in: txn)
                var into: [String: Bool] = [:]
                for edge in [a, b, c] {
                    into[edge.targetName] = try views.refers("source", to: edge.targetName, action: edge.action, zoneKey: zoneKey, in: txn)
                }
                return (out, into)
            }
        }
        try node.store.environment.write { txn in
            try views.replaceReferences(zoneKey, source: "source", old: [], new: [b, a, b], txn)
        }
        var now = try edges()
        #expect(now.out == [a, b])
        #expect(now.into == ["a": true, "b": true, "c": false])
        try node.store.environment.write { txn in
            try views.replaceReferences(zoneKey, source: "source", old: [b, b, a], new: [c, a, a], txn)
        }
        now = try edges()
        #expect(now.out == [a, c])
        #expect(now.into == ["a": true, "b": false, "c": true])
        try node.store.environment.write { txn in
            try views.replaceReferences(zoneKey, source: "source", old: [c, a], new: [], txn)
        }
        now = try edges()
        #expect(now.out.isEmpty)
        #expect(now.into == ["a": false, "b": false, "c": false])
    }
}
