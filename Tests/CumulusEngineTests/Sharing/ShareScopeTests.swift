import CumulusModel
import Testing

@testable import CumulusEngine

/// What a share opens (`Docs/DATA-MODEL.md`, "Sharing"): a zone-wide share everything; a hierarchy share its
/// root and what reaches the root through `parent`, however the records are linked.
@Suite("ShareScope")
struct ShareScopeTests {
    static let zone = ZoneID(zoneName: "Z", ownerName: "_alice")

    static func share(_ name: String, root: String?, bob: SharePermission?, acceptance: ShareParticipant.Acceptance = .accepted) -> Share {
        var participants = [ShareParticipant(userRecordName: "_alice", permission: .readWrite, role: .owner, acceptance: .accepted)]
        if let bob {
            participants.append(ShareParticipant(userRecordName: "_bob", permission: bob, role: .privateUser, acceptance: acceptance))
        }
        return Share(
            owner: "_alice", recordName: name, zoneID: zone, rootRecordName: root, shortGUID: "g-" + name,
            publicPermission: .none, participants: participants)
    }

    static func record(_ name: String, parent: String? = nil) -> Record {
        var record = Record(recordType: "Item", recordID: RecordID(recordName: name, zoneID: zone))
        record.parent = parent.map { Reference(recordID: RecordID(recordName: $0, zoneID: zone)) }
        return record
    }

    @Test("a hierarchy opens its root and descendants by parent; a cycle or a missing parent ends the walk")
    func hierarchy() throws {
        let scope = ShareScope(user: "_bob", shares: [Self.share("s", root: "root", bob: .readOnly)])
        let parents: [String: String] = ["child": "root", "grandchild": "child", "a": "b", "b": "a", "orphan": "gone"]
        let parentOf: (String) throws -> String? = { parents[$0] }
        #expect(try scope.access(to: Self.record("root"), parentOf: parentOf) == .readOnly)
        #expect(try scope.access(to: Self.record("grandchild", parent: "child"), parentOf: parentOf) == .readOnly)
        #expect(try scope.access(to: Self.record("a", parent: "b"), parentOf: parentOf) == nil, "a cycle ends")
        #expect(try scope.access(to: Self.record("orphan", parent: "gone"), parentOf: parentOf) == nil)
        #expect(try scope.access(to: Self.record("alone"), parentOf: parentOf) == nil)
    }

    @Test("a chain longer than the walk's limit is outside")
    func depthLimit() throws {
        let scope = ShareScope(user: "_bob", shares: [Self.share("s", root: "n0", bob: .readWrite)])
        let depth = ShareScope.maxDepth + 5
        let parentOf: (String) throws -> String? = { name in
            guard let n = Int(name.dropFirst()), n > 0 else { return nil }
            return "n\(n - 1)"
        }
        #expect(try scope.access(to: Self.record("n10", parent: "n9"), parentOf: parentOf) == .readWrite)
        #expect(try scope.access(to: Self.record("n\(depth)", parent: "n\(depth - 1)"), parentOf: parentOf) == nil)
    }

    @Test("invited but not accepted, removed, or not named: nothing; the owner: everything; zone-wide: every record")
    func participants() throws {
        let none: (String) throws -> String? = { _ in nil }
        for acceptance in [ShareParticipant.Acceptance.invited, .removed] {
            let scope = ShareScope(user: "_bob", shares: [Self.share("cloudkit.zoneshare", root: nil, bob: .readWrite, acceptance: acceptance)])
            #expect(!scope.isOpen)
            #expect(try scope.access(to: Self.record("x"), parentOf: none) == nil)
        }
        let zoneWide = ShareScope(user: "_bob", shares: [Self.share("cloudkit.zoneshare", root: nil, bob: .readWrite)])
        #expect(try zoneWide.access(to: Self.record("anything"), parentOf: none) == .readWrite)
        let stranger = ShareScope(user: "_carol", shares: [Self.share("cloudkit.zoneshare", root: nil, bob: .readWrite)])
        #expect(try stranger.access(to: Self.record("anything"), parentOf: none) == nil)
        let owner = ShareScope(user: "_alice", shares: [Self.share("s", root: "r", bob: nil)])
        #expect(try owner.access(to: Self.record("r"), parentOf: none) == .readWrite)
        // The share record itself is open to whoever the share opens to.
        let shareRecord = Record(recordType: Share.recordType, recordID: RecordID(recordName: "s", zoneID: Self.zone))
        let bob = ShareScope(user: "_bob", shares: [Self.share("s", root: "r", bob: .readOnly)])
        #expect(try bob.access(to: shareRecord, parentOf: none) == .readOnly)
    }
}
