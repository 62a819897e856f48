import Foundation
import Testing
@testable import CumulusModel
import CumulusTestSupport

@Suite("JSON writer")
struct JSONWriterTests {
    /// What the server wrote before: `JSONEncoder` with sorted keys over the tree.
    static func encoded(_ value: JSONValue) throws -> [UInt8] { Array(try value.serialized()) }

    static func written(_ value: JSONValue) -> [UInt8] {
        var writer = JSONWriter(capacity: 16)
        writer.value(value)
        return writer.bytes
    }

    @Test("numbers are written as JSONEncoder writes them: integers at both ends of Int64, doubles without a trailing .0")
    func numbers() throws {
        let doubles: [Double] = [
            0, -0.0, 1, -1, 0.1, 2.5, 100, 1e15, 1e16, 1e21, 1e-7, 0.000001, .leastNonzeroMagnitude, .greatestFiniteMagnitude,
            123456789012345680, -3.25, 1.0 / 3.0, 4.35, 0.30000000000000004,
        ]
        for double in doubles {
            #expect(Self.written(.double(double)) == (try Self.encoded(.double(double))), "double \(double)")
        }
        let ints: [Int64] = [0, 1, -1, 9, 10, 99, 100, Int64.max, Int64.min, Int64.min + 1, 1_700_000_000_000]
        for int in ints {
            #expect(Self.written(.int(int)) == (try Self.encoded(.int(int))), "int \(int)")
        }
        var random = RandomRecords(seed: 0x7E57)
        for _ in 0..<2_000 {
            let double = random.double()
            let int = random.int64()
            #expect(Self.written(.double(double)) == (try Self.encoded(.double(double))), "double \(double)")
            #expect(Self.written(.int(int)) == (try Self.encoded(.int(int))), "int \(int)")
        }
    }

    @Test("strings escape what JSONEncoder escapes: quote, backslash and control characters, nothing else")
    func strings() throws {
        var samples = ["", "plain", "a\"b\\c/d", "tab\there\nnew\r\u{0C}\u{08}", "é ü 😀 \u{2028} \u{7F}", "</script>"]
        samples += (0..<0x20).map { String(UnicodeScalar(UInt8($0))) }
        for sample in samples {
            #expect(Self.written(.string(sample)) == (try Self.encoded(.string(sample))), "string \(sample.debugDescription)")
        }
    }

    @Test("strings checked as they are written: valid UTF-8 gives the escaped string, anything else false, at every offset")
    func checkedStrings() throws {
        var random = RandomRecords(seed: 0xC4EC)
        // Pieces that land escapes, multi-byte characters and broken sequences on
        // both sides of the eight-byte words the writer scans by.
        let pieces: [[UInt8]] = [
            Array("abcdefgh".utf8), Array("x".utf8), Array("\"".utf8), Array("\\".utf8), [0x0A], [0x01], [0x7F],
            Array("é".utf8), Array("😀".utf8), Array("\u{2028}".utf8),
            [0xC3], [0x80], [0xFF], [0xED, 0xA0, 0x80], [0xF0, 0x9F, 0x98],
        ]
        var invalid = 0
        for _ in 0..<5_000 {
            var bytes: [UInt8] = []
            for _ in 0..<random.int(0...12) { bytes += pieces[random.int(0...(pieces.count - 1))] }
            let text = String(validating: bytes, as: UTF8.self)
            var writer = JSONWriter(capacity: 4)
            let ok = bytes.withUnsafeBytes { writer.string(checkingUTF8: $0) }
            #expect(ok == (text != nil), "bytes \(bytes)")
            if let text {
                #expect(writer.bytes == (try Self.encoded(.string(text))), "string \(text.debugDescription)")
                var key = JSONWriter(capacity: 4)
                key.beginObject()
                #expect(bytes.withUnsafeBytes { key.key(checkingUTF8: $0) })
                key.null()
                key.endObject()
                #expect(key.bytes == (try Self.encoded(.object([text: .null]))))
            } else {
                invalid += 1
            }
        }
        #expect(invalid > 500 && invalid < 4_500, "both kinds were tried: \(invalid) invalid")
    }

    @Test("random trees are written byte for byte as JSONEncoder with sorted keys writes them")
    func trees() throws {
        var random = RandomRecords(seed: 0x7433)
        func tree(_ depth: Int) -> JSONValue {
            switch random.int(0...(depth > 3 ? 4 : 6)) {
            case 0: return .null
            case 1: return .bool(random.chance(0.5))
            case 2: return .int(random.int64())
            case 3: return .double(random.double())
            case 4: return .string(random.text())
            case 5: return .array((0..<random.int(0...4)).map { _ in tree(depth + 1) })
            default:
                var members: [String: JSONValue] = [:]
                for _ in 0..<random.int(0...5) { members[random.chance(0.2) ? random.text() : random.identifier()] = tree(depth + 1) }
                return .object(members)
            }
        }
        for index in 0..<3_000 {
            let value = tree(0)
            let expected = try Self.encoded(value)
            #expect(Self.written(value) == expected, "tree \(index)")
            if Self.written(value) != expected { return }
        }
    }

    @Test("bytes are written as Data's base64, every length of padding")
    func base64() {
        var random = RandomRecords(seed: 0xBA5E)
        for length in 0..<200 {
            let bytes = (0..<length).map { _ in UInt8(random.int(0...255)) }
            var writer = JSONWriter()
            bytes.withUnsafeBytes { writer.base64($0) }
            #expect(writer.bytes == Array(("\"" + Data(bytes).base64EncodedString() + "\"").utf8), "length \(length)")
        }
    }

    @Test("members after a list written in place come in key order, and a rolled-back value leaves no trace")
    func membersAndRollBack() throws {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("records")
        writer.beginArray()
        writer.int(1)
        writer.int(2)
        writer.endArray()
        writer.members(["z": "last", "b": true, "é": .null, "a": .object([:])])
        writer.endObject()
        #expect(String(decoding: writer.bytes, as: UTF8.self) == #"{"records":[1,2],"a":{},"b":true,"z":"last","é":null}"#)

        var list = JSONWriter()
        list.beginArray()
        list.int(1)
        let mark = list.count
        let comma = list.separatorPending
        list.beginObject()
        list.key("half")
        list.rollBack(to: mark, needsComma: comma)
        list.int(3)
        list.endArray()
        #expect(String(decoding: list.bytes, as: UTF8.self) == "[1,3]")
    }
}
