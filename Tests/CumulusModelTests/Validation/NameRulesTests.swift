import Testing
@testable import CumulusModel

/// Asserts that `body` throws a `CumulusError` with `code`.
func expectCode(_ code: CumulusError.Code, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) {
    do {
        try body()
        Issue.record("expected \(code), nothing was thrown", sourceLocation: sourceLocation)
    } catch let error as CumulusError {
        #expect(error.code == code, "got \(error)", sourceLocation: sourceLocation)
        #expect(!error.message.isEmpty, sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected CumulusError \(code), got \(error)", sourceLocation: sourceLocation)
    }
}

@Suite("Name rules")
struct NameRulesTests {
    @Test("record names: 1–255 printable ASCII, no leading underscore")
    func recordNames() throws {
        try NameRules.checkRecordName("a")
        try NameRules.checkRecordName(String(repeating: "x", count: 255))
        try NameRules.checkRecordName("with space-and.dots~")
        try NameRules.checkRecordName("_9a065b60313a5937e75e03ed8e8f383d", allowSystem: true)
        expectCode(.invalidArguments) { try NameRules.checkRecordName("") }
        expectCode(.invalidArguments) { try NameRules.checkRecordName(String(repeating: "x", count: 256)) }
        expectCode(.invalidArguments) { try NameRules.checkRecordName("_private") }
        expectCode(.invalidArguments) { try NameRules.checkRecordName("café") }
        expectCode(.invalidArguments) { try NameRules.checkRecordName("tab\there") }
    }

    @Test("zone names: 1–255 printable ASCII, no leading underscore but _defaultZone")
    func zoneNames() throws {
        try NameRules.checkZoneName("Work")
        try NameRules.checkZoneName(ZoneID.defaultZoneName)
        try NameRules.checkZoneID(ZoneID(zoneName: "Work", ownerName: "_9a06"))
        expectCode(.invalidArguments) { try NameRules.checkZoneName("_hidden") }
        expectCode(.invalidArguments) { try NameRules.checkZoneName("") }
        expectCode(.invalidArguments) { try NameRules.checkZoneName(String(repeating: "z", count: 256)) }
        expectCode(.invalidArguments) { try NameRules.checkZoneID(ZoneID(zoneName: "Work", ownerName: "")) }
        expectCode(.invalidArguments) { try NameRules.checkZoneID(ZoneID(zoneName: "Wörk")) }
    }

    @Test("record types: identifiers, or the system types")
    func recordTypes() throws {
        try NameRules.checkRecordType("TodoItem")
        try NameRules.checkRecordType("a_1")
        try NameRules.checkRecordType("Users")
        try NameRules.checkRecordType("cloudkit.share")
        try NameRules.checkRecordType("T" + String(repeating: "x", count: 254))
        expectCode(.invalidArguments) { try NameRules.checkRecordType("_Private") }
        expectCode(.invalidArguments) { try NameRules.checkRecordType("1Type") }
        expectCode(.invalidArguments) { try NameRules.checkRecordType("Todo Item") }
        expectCode(.invalidArguments) { try NameRules.checkRecordType("my.type") }
        expectCode(.invalidArguments) { try NameRules.checkRecordType("") }
        expectCode(.invalidArguments) { try NameRules.checkRecordType("T" + String(repeating: "x", count: 255)) }
    }

    @Test("field names: identifiers that are not system keys")
    func fieldNames() throws {
        try NameRules.checkFieldName("title")
        try NameRules.checkFieldName("Due_Date2")
        expectCode(.invalidArguments) { try NameRules.checkFieldName("_secret") }
        expectCode(.invalidArguments) { try NameRules.checkFieldName("2fast") }
        expectCode(.invalidArguments) { try NameRules.checkFieldName("naïve") }
        expectCode(.invalidArguments) { try NameRules.checkFieldName("creationDate") }
        expectCode(.invalidArguments) { try NameRules.checkFieldName("recordName") }
        expectCode(.invalidArguments) { try NameRules.checkFieldName(String(repeating: "f", count: 256)) }
    }
}
