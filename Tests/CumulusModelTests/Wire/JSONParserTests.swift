import CumulusTestSupport
import Foundation
import Testing
@testable import CumulusModel

/// ``JSONParser`` against `JSONDecoder` (through `JSONValue`'s `Decodable`, what
/// `JSONValue.parse` used before): the same value, or both refuse, for every input.
@Suite("JSON parser")
struct JSONParserTests {
    /// What the decoder made of `text`, `nil` if it refused.
    static func decoded(_ text: [UInt8]) -> JSONValue? {
        try? JSONDecoder().decode(JSONValue.self, from: Data(text))
    }

    static func parsed(_ text: [UInt8]) -> JSONValue? {
        try? JSONValue.parse(Data(text))
    }

    static let cases = [
        "[1.0]", "[1e2]", "[-0]", "[-0.0]", "[1.5]", "[9223372036854775807]", "[9223372036854775808]", "[1E400]",
        "[0.1e1]", "[1.00000000000000000001]", #"{"a":1,"a":2}"#, #"["\ud83d\ude00"]"#, #"["\ud83d"]"#, #"["\ude00"]"#,
        "[01]", "[1.]", "[.5]", "[+1]", "[-]", #"["a\u0000b"]"#, " [true] ", "[1]x", "[\"\u{7f}\"]", #"{"a":[]}"#,
        "[-9223372036854775808]", "[-9223372036854775809]", "[\"\t\"]", "{}", "[]", "", " ", "nul", "[tru]", "[1,]",
        "{\"a\":1,}", "{\"a\" 1}", "{1:2}", #"["\x"]"#, #"["\u12"]"#, #"["\/\b\f\n\r\t\\\""]"#, "\"top\"", "12", "-1.5e-3",
        "[\"é😀\"]", "[1e-400]", "[123456789012345678901234567890]", "[1E+2]", "[2.5E-1]",
    ]

    @Test("the cases JSONDecoder's edges are made of: the same answer")
    func edges() {
        for text in Self.cases {
            let bytes = Array(text.utf8)
            #expect(Self.parsed(bytes) == Self.decoded(bytes), "\(text)")
        }
        // Invalid UTF-8 inside a string is refused by both.
        let invalid: [UInt8] = [0x5B, 0x22, 0xC3, 0x28, 0x22, 0x5D]
        #expect(Self.parsed(invalid) == nil && Self.decoded(invalid) == nil)
    }

    @Test("20,000 mutated CloudKit bodies: the same answer as JSONDecoder")
    func mutated() {
        let bases = [
            #"{"zoneID":{"zoneName":"Lists"},"operations":[{"operationType":"create","record":{"recordName":"a","recordType":"T","fields":{"n":{"value":1},"d":{"value":2.5e3},"s":{"value":"x \u00e9 \ud83d\ude00","type":"STRING"},"l":{"value":[1,-2,3.0]},"b":{"value":true},"z":{"value":null}}}}]}"#,
            #"[{"a":[[],{},"",0,-0.5,1E5]},"\n\t",false]"#,
        ]
        var random = SeededRandom(seed: 0x15_0A)
        let pieces = ["{", "}", "[", "]", ",", ":", "\"", "\\", "\\u", "null", "true", "-", ".", "e", "0", "1e999", "\u{0}", "😀"]
        for round in 0..<20_000 {
            var bytes = Array(bases[round % bases.count].utf8)
            let edits = 1 + Int(random.next() % 3)
            for _ in 0..<edits where !bytes.isEmpty {
                let at = Int(random.next() % UInt64(bytes.count))
                switch random.next() % 3 {
                case 0: bytes.insert(contentsOf: Array(pieces[Int(random.next() % UInt64(pieces.count))].utf8), at: at)
                case 1: bytes.remove(at: at)
                default: bytes[at] = UInt8(truncatingIfNeeded: random.next())
                }
            }
            let parsed = Self.parsed(bytes)
            #expect(parsed == Self.decoded(bytes), "\(String(decoding: bytes, as: UTF8.self))")
        }
    }

    @Test("nesting: 512 deep parses, 513 is refused; 400 KB of values nested 100 deep parses in one pass")
    func nesting() throws {
        #expect(Self.parsed(Array((String(repeating: "[", count: 512) + String(repeating: "]", count: 512)).utf8)) != nil)
        #expect(Self.parsed(Array((String(repeating: "[", count: 513) + String(repeating: "]", count: 513)).utf8)) == nil)
        // JSONDecoder took about 16 s for this (minutes for the 4 MiB a request may
        // carry); the parser reads each byte once.
        let chain = String(repeating: #"{"a":"#, count: 100) + "1" + String(repeating: "}", count: 100)
        let body = "[" + Array(repeating: chain, count: 400_000 / chain.utf8.count).joined(separator: ",") + "]"
        guard case .array(let items) = try JSONValue.parse(Data(body.utf8)) else {
            Issue.record("not an array")
            return
        }
        #expect(items.count == 400_000 / chain.utf8.count)
    }

    @Test("memory: a body built to parse into many values is refused part-way with limitExceeded; CloudKit's shapes fit their body's limit")
    func memoryLimit() throws {
        func parse(_ text: String) throws -> JSONValue {
            try JSONValue.parse(Data(text.utf8), memoryLimit: JSONValue.memoryLimit(forBodyBytes: text.utf8.count))
        }
        for amplifying in ["[1]", "[]", "{}", #"{"a":{}}"#] {
            let body = "[" + Array(repeating: amplifying, count: 100_000).joined(separator: ",") + "]"
            do {
                _ = try parse(body)
                Issue.record("\(amplifying) × 100,000 was parsed")
            } catch let error as CumulusError {
                #expect(error.code == .limitExceeded, "\(amplifying): \(error)")
            }
            // Without a limit (the tools' own files) it parses.
            #expect(throws: Never.self) { try JSONValue.parse(Data(body.utf8)) }
        }
        // A list of one-digit numbers, the densest values CloudKit sends.
        let digits = "[" + Array(repeating: "7", count: 500_000).joined(separator: ",") + "]"
        #expect(try parse(digits).arrayValue?.count == 500_000)
        // 200 records/modify operations, each with 40 short fields.
        let fields = (0..<40).map { #""f\#($0)":{"value":\#($0 % 10)}"# }.joined(separator: ",")
        let operation = #"{"operationType":"forceReplace","record":{"recordName":"r","recordType":"T","fields":{\#(fields)}}}"#
        let modify = #"{"operations":["# + Array(repeating: operation, count: 200).joined(separator: ",") + "]}"
        #expect(try parse(modify)["operations"]?.arrayValue?.count == 200)
        // Small bodies get 64 KiB, so deep but tiny ones still parse.
        #expect(JSONValue.memoryLimit(forBodyBytes: 0) == 0)
        #expect(JSONValue.memoryLimit(forBodyBytes: 10) == 64 << 10)
        let deep = String(repeating: "[", count: 512) + String(repeating: "]", count: 512)
        #expect(throws: Never.self) { try parse(deep) }
    }
}
