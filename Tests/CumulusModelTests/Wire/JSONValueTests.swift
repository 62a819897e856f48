import Foundation
import Testing
@testable import CumulusModel

@Suite("JSONValue")
struct JSONValueTests {
    @Test("integers stay exact; other numbers are doubles")
    func numbers() throws {
        let json = try JSONValue.parse(Data(#"{"big": 9007199254740993, "min": -9223372036854775808, "half": 0.5, "huge": 1e300, "t": true, "n": null}"#.utf8))
        #expect(json["big"] == .int(9_007_199_254_740_993))
        #expect(json["min"] == .int(.min))
        #expect(json["half"] == .double(0.5))
        #expect(json["huge"] == .double(1e300))
        #expect(json["t"] == .bool(true))
        #expect(json["n"] == .null)
        #expect(json["missing"] == nil)
        let text = String(decoding: try JSONValue.int(9_007_199_254_740_993).serialized(), as: UTF8.self)
        #expect(text == "9007199254740993")
    }

    @Test("round trip through bytes, keys sorted")
    func roundTrip() throws {
        let value: JSONValue = ["b": [1, 2.5, "x", nil, false], "a": ["nested": ["deep": "é😀"]]]
        #expect(try throughBytes(value) == value)
        #expect(String(decoding: try JSONValue.object(["b": 1, "a": 2]).serialized(), as: UTF8.self) == #"{"a":2,"b":1}"#)
    }

    @Test("malformed JSON is invalidArguments")
    func malformed() {
        expectWireError("malformed JSON") { _ = try JSONValue.parse(Data("{\"a\": ".utf8)) }
        expectWireError("malformed JSON") { _ = try JSONValue.parse(Data("nope".utf8)) }
    }

    @Test("accessors")
    func accessors() {
        #expect(JSONValue.double(3).int64Value == 3)
        #expect(JSONValue.double(3.5).int64Value == nil)
        #expect(JSONValue.int(3).doubleValue == 3)
        #expect(JSONValue.string("s").stringValue == "s")
        #expect(JSONValue.array([1]).arrayValue == [1])
        #expect(JSONValue.bool(true).boolValue == true)
        #expect(JSONValue.object(["k": 1]).objectValue == ["k": 1])
    }
}
