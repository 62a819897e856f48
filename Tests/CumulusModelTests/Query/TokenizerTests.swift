import CumulusTestSupport
import Testing
@testable import CumulusModel

@Suite("Tokenizer")
struct TokenizerTests {
    /// The tokenizer as written before the ASCII fast path: a Character walk. The fast
    /// path must give exactly its tokens, or indexes written before and after differ.
    static func reference(_ text: String) -> Set<String> {
        var result = Set<String>()
        for word in text.split(whereSeparator: { $0.isWhitespace }) {
            var token = TextFolding.tokenFolded(String(word))
            if token.utf8.count > Tokenizer.maxTokenLength {
                token = String(decoding: token.utf8.prefix(Tokenizer.maxTokenLength), as: UTF8.self)
            }
            if !token.isEmpty && !Tokenizer.stopWords.contains(token) { result.insert(token) }
        }
        return result
    }

    @Test("words split at white space, folded, stop words dropped, repeats once")
    func basics() {
        #expect(Tokenizer.tokens("The Quick\tbrown\r\nFOX and the fox") == ["quick", "brown", "fox"])
        #expect(Tokenizer.tokens("Crème BRÛLÉE\u{00A0}café") == ["creme", "brulee", "cafe"])
        #expect(Tokenizer.tokens("  \n\t ") == [])
        #expect(Tokenizer.tokens("a an THE") == [])
    }

    @Test("a word longer than the index key limit is cut to it")
    func longWords() {
        let long = String(repeating: "Ab", count: 100)
        #expect(Tokenizer.tokens(long) == [String(repeating: "ab", count: 64)])
        let accented = String(repeating: "Ωé", count: 100)
        let cut = Tokenizer.tokens(accented)
        #expect(cut.count == 1 && cut.first.map { $0.utf8.count <= Tokenizer.maxTokenLength } == true)
    }

    @Test("20,000 random texts over every ASCII byte, with some non-ASCII: the same tokens as the Character walk")
    func agreesWithCharacterWalk() {
        var random = RandomRecords(seed: 0x70CE_0014)
        func next(_ bound: Int) -> Int { random.int(0...bound - 1) }
        let extras: [String] = ["é", "\u{00A0}", "\u{2003}", "ß", "\r\n", "Å", "\u{0301}"]
        for index in 0..<20_000 {
            var text = ""
            for _ in 0..<next(40) {
                switch next(10) {
                case 0: text.unicodeScalars.append(Unicode.Scalar(UInt8(next(128))))
                case 1: text += [" ", "\t", "\n", "\u{0B}", "\u{0C}", "\r", "\u{1C}", "\u{1F}"][next(8)]
                case 2 where index % 4 == 0: text += extras[next(extras.count)]
                case 3: text += ["the", "And", "IS", "of"][next(4)]
                default: text.unicodeScalars.append(Unicode.Scalar(UInt8(0x41 + next(58))))
                }
            }
            #expect(Tokenizer.tokens(text) == Self.reference(text), "text \(index): \(text.debugDescription)")
        }
    }

    @Test("a record's tokens are the same read from its values, from checked stored bytes and from unchecked ones")
    func recordPathsAgree() throws {
        var random = RandomRecords(seed: 0x70CE_0016)
        let words = ["Alpha", "beta", "THE", "gamma\tdelta", "Crème brûlée", "Ωé", String(repeating: "Xy", count: 90), "of", ""]
        func text() -> String { (0..<random.int(0...6)).map { _ in words[random.int(0...words.count - 1)] }.joined(separator: " ") }
        let searchable: Set<String> = ["title", "notes", "tags", "é"]
        for index in 0..<500 {
            var record = Record(recordType: "Item", recordID: RecordID(recordName: "item-\(index)"))
            record["title"] = .string(text())
            record["notes"] = .string(text())
            record["tags"] = .list((0..<random.int(1...3)).map { _ in .string(text()) })
            record["é"] = .string(text())
            record["hidden"] = .string(text())
            record["count"] = .int64(Int64(index))
            if index % 3 == 0 { record["title"] = .int64(7) }
            var expected = Set<String>()
            for key in searchable {
                record[key]?.forEachScalar { if case .string(let value) = $0 { expected.formUnion(Tokenizer.tokens(value)) } }
            }
            let bytes = try RecordCodec.encode(record)
            let checked = try bytes.withUnsafeBytes { try RecordCodec.decodeLazily($0) }
            var hints = RecordDecodeHints()
            let unchecked = try bytes.withUnsafeBytes { try RecordCodec.decodeForReading($0, hints: &hints) }
            for (label, candidate) in [("values", record), ("checked", checked), ("unchecked", unchecked)] {
                #expect(Tokenizer.tokens(of: candidate, where: searchable.contains) == expected, "record \(index), \(label)")
            }
        }
    }

    @Test("unchecked stored bytes with invalid UTF-8 in a searchable string give no tokens at all, and say why")
    func damagedStringGivesNoTokens() throws {
        var record = Record(recordType: "Item", recordID: RecordID(recordName: "damaged"))
        record["notes"] = .string("MARKER words here")
        record["title"] = .string("fine title")
        var bytes = try RecordCodec.encode(record)
        let marker = Array("MARKER".utf8)
        let at = try #require((0...(bytes.count - marker.count)).first { Array(bytes[$0..<$0 + marker.count]) == marker })
        bytes[at] = 0xFF
        var hints = RecordDecodeHints()
        let read = try bytes.withUnsafeBytes { try RecordCodec.decodeForReading($0, hints: &hints) }
        #expect(Tokenizer.tokens(of: read, where: { _ in true }).isEmpty)
        #expect(read.storedValuesFailure != nil)
    }

    @Test("the packed stop-word check knows exactly the stop words, not their prefixes, extensions or NUL-padded forms")
    func stopWordCheck() {
        for word in Tokenizer.stopWords {
            let bytes = Array(word.utf8)
            #expect(Tokenizer.isStopWord(bytes[...]), "\(word)")
            #expect(!Tokenizer.isStopWord((bytes + [0])[...]), "\(word) + NUL")
            #expect(!Tokenizer.isStopWord((bytes + Array("s".utf8))[...]) || Tokenizer.stopWords.contains(word + "s"))
            #expect(!Tokenizer.isStopWord(bytes.dropLast()) || Tokenizer.stopWords.contains(String(word.dropLast())))
        }
        for word in ["", "th", "thee", "theirs", "andd", "zz", "abcdefgh", "\0a", "a\0"] {
            #expect(!Tokenizer.isStopWord(Array(word.utf8)[...]), "\(word.debugDescription)")
        }
        // A slice that does not start at index 0 is read from its own start.
        let sentence = Array("xxthe".utf8)
        #expect(Tokenizer.isStopWord(sentence[2...]))
    }
}
