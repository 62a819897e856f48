import CumulusTestSupport
import Foundation
import Testing
@testable import CumulusModel

/// A ``JSONDocument`` read in place must answer what the ``JSONValue`` built from it
/// answers: request handlers read bodies through either.
@Suite("JSON documents read in place")
struct JSONDocumentTests {
    /// Whether every read of `node` agrees with `value`, recursively.
    static func agrees(_ node: JSONDocument.Node, _ value: JSONValue) throws -> Bool {
        guard node.stringValue == value.stringValue, node.boolValue == value.boolValue,
            node.int64Value == value.int64Value, node.doubleValue == value.doubleValue,
            node.isNull == value.isNull, node.isObject == value.isObject, node.kindName == value.kindName,
            node[#"\u0000missing"#] == nil
        else { return false }
        if let elements = value.arrayValue {
            guard let nodes = try node.arrayValue, nodes.count == elements.count else { return false }
            return try zip(nodes, elements).allSatisfy { try agrees($0, $1) }
        }
        if try node.arrayValue != nil { return false }
        if let members = value.objectValue {
            return try members.allSatisfy { key, member in try node[key].map { try agrees($0, member) } ?? false }
        }
        return true
    }

    @Test("bodies with escapes, duplicate keys, numbers of every form: each read agrees with the built value")
    func reads() throws {
        let texts = [
            #"{"a":1,"a":2,"b\u0022q":"x\ny","é":[1.0,1e2,-0,0.5,9223372036854775808,-9223372036854775808],"n":null,"t":true,"f":false}"#,
            #"{"records":[{"recordName":"a"},{"recordName":"b\/c","desiredKeys":["k"]}],"zoneID":{"zoneName":"Z"}}"#,
            #"[{"a":[[],{},"",0,-0.5,1E5]},"\n\t",false]"#, #""\ud83d\ude00""#, "12", "{}", "[]",
            #"{"k\u00e9y":"v","key":"w"}"#,
        ]
        for text in texts {
            let document = try JSONDocument(parsing: Array(text.utf8))
            let value = try document.root.json()
            #expect(value == (try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))), "\(text)")
            #expect(try Self.agrees(document.root, value), "\(text)")
        }
        // An escaped key is found by its text, and the first of duplicates wins.
        let document = try JSONDocument(parsing: Array(#"{"k\u00e9y":1,"kéy":2}"#.utf8))
        #expect(document.root["kéy"]?.int64Value == 1)
    }

    @Test("20,000 mutated bodies: wherever one parses, every read agrees")
    func mutated() throws {
        let base = #"{"zoneID":{"zoneName":"Lists"},"records":[{"recordName":"a\u00e9","desiredKeys":["x","y"]},{"recordName":"b"}],"resultsLimit":5,"d":2.5e3,"z":null}"#
        var random = SeededRandom(seed: 0xD0C)
        let pieces = ["{", "}", "[", "]", ",", ":", "\"", "\\", "\\u", "null", "true", "-", ".", "e", "0", "\u{0}", "😀"]
        var parsedCount = 0
        for _ in 0..<20_000 {
            var bytes = Array(base.utf8)
            for _ in 0..<(1 + Int(random.next() % 2)) where !bytes.isEmpty {
                let at = Int(random.next() % UInt64(bytes.count))
                switch random.next() % 3 {
                case 0: bytes.insert(contentsOf: Array(pieces[Int(random.next() % UInt64(pieces.count))].utf8), at: at)
                case 1: bytes.remove(at: at)
                default: bytes[at] = UInt8(truncatingIfNeeded: random.next())
                }
            }
            guard let document = try? JSONDocument(parsing: bytes) else { continue }
            parsedCount += 1
            let value = try document.root.json()
            #expect(try Self.agrees(document.root, value), "\(String(decoding: bytes, as: UTF8.self))")
        }
        #expect(parsedCount > 1_000)
    }

    @Test("memory: every part built from one document counts against its one limit; the tape keeps to its bound")
    func memory() throws {
        let text = "{\"a\":[" + Array(repeating: "1", count: 1_000).joined(separator: ",") + "],\"b\":[1]}"
        // The array of 1,000 costs about 32 KB as values: two builds of it do not fit 48 KB.
        let document = try JSONDocument(parsing: Array(text.utf8), memoryLimit: 48_000)
        #expect(throws: Never.self) { _ = try document.root["a"]?.json() }
        #expect { _ = try document.root["a"]?.json() } throws: { ($0 as? CumulusError)?.code == .limitExceeded }
        // The densest text there is: one value per two bytes.
        let dense = Array(("[" + Array(repeating: "7", count: 100_000).joined(separator: ",") + "]").utf8)
        let tape = try JSONDocument(parsing: dense).tape
        #expect(tape.count == 100_001)
        #expect(MemoryLayout<JSONDocument.Entry>.stride * tape.capacity <= 6 * dense.count + 64)
        // The tape is paid for first: a limit below it refuses the body before it is read.
        #expect { _ = try JSONDocument(parsing: dense, memoryLimit: 6 * dense.count - 1) } throws: {
            ($0 as? CumulusError)?.code == .limitExceeded
        }
    }
}
