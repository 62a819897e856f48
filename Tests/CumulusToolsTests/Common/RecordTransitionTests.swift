import CumulusLog
import CumulusModel
import CumulusTools
import Testing

@Suite("Record transitions")
struct RecordTransitionTests {
    let zone = ZoneID(zoneName: "Z", ownerName: "_u")
    let otherZone = ZoneID(zoneName: "Y", ownerName: "_u")
    let database = DatabaseID(container: "iCloud.x", scope: .private, owner: "_u")

    func location(_ name: String, in zone: ZoneID? = nil) -> RecordLocation {
        RecordLocation(database: database, recordID: RecordID(recordName: name, zoneID: zone ?? self.zone))
    }

    @Test("each record event becomes the state change it makes; other events leave records alone")
    func statesFromEvents() throws {
        var record = Record(recordType: "Note", recordID: location("n").recordID)
        record["title"] = .string("one")
        record.recordChangeTag = "t1"
        let saved = try #require(RecordTransition(.recordSaved(database: database, record: record, changedKeys: ["title"])))
        #expect(saved.concerns(location("n")) && !saved.concerns(location("m")))
        #expect(saved.state(after: nil) == record)

        let bump = try #require(RecordTransition(.changeTagBumped(
            database: database, recordID: location("n").recordID, changeTag: "t2", source: location("child").recordID)))
        var bumped = record
        bumped.recordChangeTag = "t2"
        #expect(bump.state(after: record) == bumped)
        #expect(bump.state(after: nil) == nil, "a bump of a record that does not exist makes none")

        let deleted = try #require(RecordTransition(.recordDeleted(
            database: database, recordID: location("n").recordID, recordType: "Note", cause: .direct)))
        #expect(deleted.state(after: record) == nil)

        let zoneGone = try #require(RecordTransition(.zoneDeleted(database: database, zoneID: zone)))
        #expect(zoneGone.concerns(location("n")) && zoneGone.concerns(location("m")))
        #expect(!zoneGone.concerns(location("n", in: otherZone)))
        #expect(zoneGone.state(after: record) == nil)

        #expect(RecordTransition(.zoneSaved(database: database, zone: Zone(zoneID: zone))) == nil)
    }
}
