import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusTestSupport
import CumulusTools
import Foundation
import Testing

/// Share events in audit exports (issue 17, "Access"): who could see what, and from
/// which commit, is in the export as lines of its own, chained like every other line.
@Suite("Share events in audit exports")
struct ShareAuditTests {
    @Test("saving, accepting and deleting a share each leave a line naming the participants, and the export verifies")
    func shareLines() async throws {
        let world = try ToolWorld()
        let zone = try await world.makeZone("Trip")
        let bob = "_bob00000000000000000000000000001"
        try await world.save([Record.make("Place", "root", in: zone)])
        let share = Record(recordType: Share.recordType, recordID: RecordID(recordName: "trip-share", zoneID: zone))
        let definition = ShareDefinition(
            rootRecordName: "root", participants: [.init(userRecordName: bob, permission: .readOnly)])
        let saved = try await world.db.modify(
            ModifyOperation(saves: [RecordSave(share, mode: .forceReplace, share: definition)]), as: ToolWorld.user)
        _ = try saved.saveResults[0].result.get()
        let stored = try #require(try world.db.share(describing: try world.db.fetch(share.recordID, as: ToolWorld.user)))
        let accepted = try await world.container.acceptShares(
            [stored.shortGUID], container: ToolWorld.containerID, environment: .development, as: bob)
        #expect(accepted.count == 1)
        _ = try accepted[0].get()
        try await world.delete([share.recordID])

        func keys(_ line: JSONValue?) -> [String] {
            guard case .array(let items)? = line?["changedKeys"] else { return [] }
            return items.compactMap(\.stringValue)
        }
        let path = try AuditTests.export(world, .jsonl)
        let lines = try AuditTests.lines(path).dropFirst().map { try JSONValue.parse(Data($0.utf8)) }
        let shareLines = lines.filter { ["shareSaved", "shareDeleted"].contains($0["operation"]?.stringValue ?? "") }
        #expect(shareLines.map { $0["operation"]?.stringValue } == ["shareSaved", "shareSaved", "shareDeleted"], "\(shareLines)")
        let invited = "\(bob):USER:READ_ONLY:INVITED"
        let joined = "\(bob):USER:READ_ONLY:ACCEPTED"
        #expect(keys(shareLines.first).contains(invited), "\(shareLines)")
        #expect(keys(shareLines.dropFirst().first).contains(joined), "\(shareLines)")
        #expect(shareLines.dropFirst().first?["user"]?.stringValue == bob, "accepting is bob's own commit")
        #expect(shareLines.first?["cause"]?.stringValue == "root:root public:NONE")
        #expect(shareLines.allSatisfy { $0["recordID"]?.stringValue == "trip-share" }, "\(shareLines)")
        #expect(try AuditVerifier.verify(path: path, against: world.store).isValid)
    }
}
