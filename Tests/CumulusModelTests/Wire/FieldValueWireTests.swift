import Foundation
import Testing
@testable import CumulusModel

@Suite("Field values on the wire")
struct FieldValueWireTests {
    static let zone = ZoneID(zoneName: "Lists", ownerName: "_owner")
    static let reference = Reference(recordID: RecordID(recordName: "target", zoneID: zone), action: .deleteSelf)
    static let location = Location(
        latitude: 48.8566, longitude: 2.3522, altitude: 35, horizontalAccuracy: 5, verticalAccuracy: 3, course: 90,
        speed: 1.5, timestamp: Timestamp(millisecondsSince1970: 1_700_000_000_123))
    static let asset = Asset(fileChecksum: "abc", size: 1024, referenceChecksum: "ref", wrappingKey: "key", receipt: "rcpt")

    static let samples: [(FieldValue, String)] = [
        (.string("héllo 😀"), "STRING"),
        (.int64(.max), "INT64"),
        (.int64(.min), "INT64"),
        (.double(2.5), "DOUBLE"),
        (.double(3), "DOUBLE"),
        (.timestamp(Timestamp(millisecondsSince1970: 1_700_000_000_123)), "TIMESTAMP"),
        (.bytes([0, 1, 2, 255]), "BYTES"),
        (.bytes([]), "BYTES"),
        (.reference(reference), "REFERENCE"),
        (.reference(Reference(recordID: RecordID(recordName: "v", zoneID: zone), action: .validate)), "REFERENCE"),
        (.location(location), "LOCATION"),
        (.location(Location(latitude: -1, longitude: 1)), "LOCATION"),
        (.asset(asset), "ASSETID"),
        (.asset(Asset(fileChecksum: "c", size: 0)), "ASSETID"),
        (.list([.string("a"), .string("b")]), "STRING_LIST"),
        (.list([.int64(1), .int64(-2)]), "INT64_LIST"),
        (.list([.double(1.5)]), "DOUBLE_LIST"),
        (.list([.timestamp(Timestamp(millisecondsSince1970: 0))]), "TIMESTAMP_LIST"),
        (.list([.bytes([9])]), "BYTES_LIST"),
        (.list([.reference(reference)]), "REFERENCE_LIST"),
        (.list([.location(location)]), "LOCATION_LIST"),
        (.list([.asset(asset)]), "ASSET_LIST"),
        (.list([]), "STRING_LIST"),
    ]

    @Test("every type round-trips with its type string")
    func roundTrip() throws {
        for (value, type) in Self.samples {
            let json = try throughBytes(value.wireField)
            #expect(json["type"] == .string(type))
            #expect(try FieldValue(wireField: json, field: "f", defaultZone: .default) == value, "\(value)")
        }
    }

    @Test("encoded shapes: timestamps as integer ms, bytes as base64, references with zone and action")
    func shapes() {
        #expect(FieldValue.timestamp(Timestamp(millisecondsSince1970: 5)).wireValue == .int(5))
        #expect(FieldValue.bytes([0xFF, 0x00]).wireValue == .string("/wA="))
        #expect(FieldValue.double(3).wireValue == .double(3))
        #expect(
            FieldValue.reference(Self.reference).wireValue
                == ["recordName": "target", "zoneID": ["zoneName": "Lists", "ownerRecordName": "_owner"], "action": "DELETE_SELF"])
        #expect(FieldValue.location(Location(latitude: 1, longitude: 2)).wireValue == ["latitude": 1.0, "longitude": 2.0])
    }

    @Test("a missing type is inferred from the JSON shape")
    func inference() throws {
        func read(_ value: JSONValue) throws -> FieldValue {
            try FieldValue(wireField: ["value": value], field: "f", defaultZone: Self.zone)
        }
        #expect(try read("s") == .string("s"))
        #expect(try read(42) == .int64(42))
        #expect(try read(4.5) == .double(4.5))
        #expect(try read(true) == .int64(1))
        #expect(try read(false) == .int64(0))
        #expect(try read(["recordName": "r"]) == .reference(Reference(recordID: RecordID(recordName: "r", zoneID: Self.zone))))
        #expect(try read(["latitude": 1, "longitude": 2.5]) == .location(Location(latitude: 1, longitude: 2.5)))
        #expect(try read(["fileChecksum": "c", "size": 3]) == .asset(Asset(fileChecksum: "c", size: 3)))
        #expect(try read(["a", "b"]) == .list([.string("a"), .string("b")]))
        #expect(try read([1, 2.5]) == .list([.double(1), .double(2.5)]))
        #expect(try read([]) == .list([]))
        #expect(try read([["recordName": "r"]]) == .list([.reference(Reference(recordID: RecordID(recordName: "r", zoneID: Self.zone)))]))
    }

    @Test("lenient input: integers for DOUBLE and TIMESTAMP, numeric strings, ASSET, lower-case types")
    func leniency() throws {
        func read(_ value: JSONValue, _ type: String) throws -> FieldValue {
            try FieldValue(wireField: ["value": value, "type": .string(type)], field: "f")
        }
        #expect(try read(3, "DOUBLE") == .double(3))
        #expect(try read(1_700_000_000_000, "TIMESTAMP") == .timestamp(Timestamp(millisecondsSince1970: 1_700_000_000_000)))
        #expect(try read(1.9, "TIMESTAMP") == .timestamp(Timestamp(millisecondsSince1970: 1)))
        #expect(try read(true, "INT64") == .int64(1))
        #expect(try read(7.0, "INT64") == .int64(7))
        #expect(try read("123", "INT64") == .int64(123))
        #expect(try read("1.5", "DOUBLE") == .double(1.5))
        #expect(try read("99", "TIMESTAMP") == .timestamp(Timestamp(millisecondsSince1970: 99)))
        #expect(try read(["fileChecksum": "c", "size": 1], "ASSET") == .asset(Asset(fileChecksum: "c", size: 1)))
        #expect(try read([["fileChecksum": "c", "size": 1]], "ASSETID_LIST") == .list([.asset(Asset(fileChecksum: "c", size: 1))]))
        #expect(try read("x", "string") == .string("x"))
        #expect(try read([], "INT64_LIST") == .list([]))
        #expect(try read([1, 2], "DOUBLE_LIST") == .list([.double(1), .double(2)]))
    }

    @Test("references: default zone, default action, ownerName, action strings")
    func references() throws {
        func read(_ value: JSONValue) throws -> FieldValue {
            try FieldValue(wireField: ["value": value, "type": "REFERENCE"], field: "owner", defaultZone: Self.zone)
        }
        #expect(try read(["recordName": "r"]) == .reference(Reference(recordID: RecordID(recordName: "r", zoneID: Self.zone), action: .none)))
        let other = ZoneID(zoneName: "Other", ownerName: "_someone")
        #expect(
            try read(["recordName": "r", "zoneID": ["zoneName": "Other", "ownerName": "_someone"]])
                == .reference(Reference(recordID: RecordID(recordName: "r", zoneID: other))))
        #expect(
            try read(["recordName": "r", "zoneID": ["zoneName": "Other", "ownerRecordName": "_someone"], "action": "VALIDATE"])
                == .reference(Reference(recordID: RecordID(recordName: "r", zoneID: other), action: .validate)))
        #expect(
            try read(["recordName": "r", "zoneID": ["zoneName": "Other"], "action": "NONE"])
                == .reference(Reference(recordID: RecordID(recordName: "r", zoneID: ZoneID(zoneName: "Other", ownerName: "_owner")))))
        #expect(
            try read(["recordName": "r", "action": "DELETE_SELF"])
                == .reference(Reference(recordID: RecordID(recordName: "r", zoneID: Self.zone), action: .deleteSelf)))
    }

    @Test("bad input is invalidArguments naming the field")
    func errors() {
        func read(_ json: JSONValue) throws {
            _ = try FieldValue(wireField: json, field: "price")
        }
        let cases: [(JSONValue, String)] = [
            ("just a string", "must be an object"),
            ([:], "has no value"),
            (["value": nil], "has no value"),
            (["value": 1, "type": "FLOAT"], "unknown type 'FLOAT'"),
            (["value": 1, "type": "FLOAT_LIST"], "unknown type"),
            (["value": 1, "type": 5], "type must be a string"),
            (["value": 1, "type": "STRING"], "STRING value cannot be a number"),
            (["value": 1.5, "type": "INT64"], "not an integer"),
            (["value": "x", "type": "INT64"], "not an integer"),
            (["value": true, "type": "DOUBLE"], "DOUBLE value cannot be a boolean"),
            (["value": "%%%", "type": "BYTES"], "not valid base64"),
            (["value": 1e300, "type": "TIMESTAMP"], "out of range"),
            (["value": ["recordName": 5], "type": "REFERENCE"], "recordName"),
            (["value": ["recordName": "r", "action": "CASCADE"], "type": "REFERENCE"], "unknown reference action 'CASCADE'"),
            (["value": ["recordName": "r", "zoneID": ["ownerName": "x"]], "type": "REFERENCE"], "zoneName"),
            (["value": ["latitude": 1], "type": "LOCATION"], "latitude and longitude"),
            (["value": ["latitude": "1", "longitude": 2], "type": "LOCATION"], "latitude must be a number"),
            (["value": ["fileChecksum": "c"], "type": "ASSETID"], "integer size"),
            (["value": "a", "type": "STRING_LIST"], "must be an array"),
            (["value": ["a", 1], "type": "STRING_LIST"], "STRING value cannot be a number"),
            (["value": ["a", 1]], "mixes INT64, STRING"),
            (["value": [["a"]]], "cannot nest"),
            (["value": ["nope": 1]], "cannot infer"),
        ]
        for (json, fragment) in cases {
            expectWireError(fragment) { try read(json) }
            do {
                try read(json)
            } catch let error as CumulusError {
                #expect(error.field == "price" && error.message.contains("'price'"), "\(error)")
            } catch {
                Issue.record("\(error)")
            }
        }
    }
}
