import Testing

@testable import CumulusStorage

@Suite("zstd dictionaries")
struct ZstdDictionaryTests {
    /// Small JSON-like records that share structure but differ in values, like records.
    static func records(count: Int, seed: UInt64) -> [[UInt8]] {
        var generator = SeededGenerator(seed: seed)
        let types = ["Note", "Task", "Contact", "Event"]
        return (0..<count).map { index in
            let number = UInt32.random(in: 0...999_999, using: &generator)
            let json = """
                {"recordName":"rec-\(number)","recordType":"\(types[index % types.count])",\
                "zoneID":{"zoneName":"_defaultZone","ownerName":"_user\(number % 97)"},\
                "fields":{"title":{"value":"Item \(number)","type":"STRING"},\
                "createdAt":{"value":\(1_700_000_000 + Int(number)),"type":"TIMESTAMP"},\
                "done":{"value":\(number % 2 == 0),"type":"INT64"}},"recordChangeTag":"\(String(number, radix: 36))"}
                """
            return Array(json.utf8)
        }
    }

    @Test func trainedDictionaryImprovesCompressionOfSmallRecords() throws {
        let training = Self.records(count: 1000, seed: 1)
        let dictionary = try ZstdDictionary.train(samples: training, capacity: 8 * 1024)
        #expect(dictionary.id != 0)
        #expect(dictionary.bytes.count <= 8 * 1024)

        let plain = try ZstdCompressor()
        let withDictionary = try ZstdCompressor(dictionary: dictionary)
        let decompressor = try ZstdDecompressor(dictionaries: [dictionary])
        var plainTotal = 0
        var dictionaryTotal = 0
        var rawTotal = 0
        for record in Self.records(count: 200, seed: 2) {
            let frame = try withDictionary.compress(record)
            #expect(ZstdDecompressor.dictionaryID(of: frame) == dictionary.id)
            #expect(try decompressor.decompress(frame, maxOutputSize: 1 << 16) == record)
            dictionaryTotal += frame.count
            plainTotal += try plain.compress(record).count
            rawTotal += record.count
        }
        // Without a dictionary small records barely compress; with one they shrink a lot.
        #expect(Double(dictionaryTotal) < Double(plainTotal) * 0.5, "dict \(dictionaryTotal) vs plain \(plainTotal)")
        #expect(dictionaryTotal < rawTotal / 3)
    }

    @Test func decompressionRequiresTheRightDictionary() throws {
        let dictionary = try ZstdDictionary.train(samples: Self.records(count: 1000, seed: 3), capacity: 4096)
        let other = try ZstdDictionary.train(samples: Self.records(count: 1000, seed: 4).map { $0.reversed() }, capacity: 4096)
        #expect(dictionary.id != other.id)
        let frame = try ZstdCompressor(dictionary: dictionary).compress(Self.records(count: 1, seed: 5)[0])

        #expect(throws: StorageError.unknownDictionary(id: dictionary.id)) {
            try ZstdDecompressor().decompress(frame, maxOutputSize: 1 << 16)
        }
        #expect(throws: StorageError.unknownDictionary(id: dictionary.id)) {
            try ZstdDecompressor(dictionaries: [other]).decompress(frame, maxOutputSize: 1 << 16)
        }
        #expect(throws: StorageError.self) { try ZstdDecompressor(dictionaries: [dictionary, dictionary]) }
        let both = try ZstdDecompressor(dictionaries: [other, dictionary])
        #expect(try both.decompress(frame, maxOutputSize: 1 << 16) == Self.records(count: 1, seed: 5)[0])
        // Frames without a dictionary still decompress with dictionaries loaded.
        let plainFrame = try ZstdCompressor().compress([UInt8]("plain"))
        #expect(try both.decompress(plainFrame, maxOutputSize: 100) == [UInt8]("plain"))
    }

    @Test func framesKeepTheirChecksumWhenUsingADictionary() throws {
        let dictionary = try ZstdDictionary.train(samples: Self.records(count: 500, seed: 6), capacity: 4096)
        let record = Self.records(count: 1, seed: 7)[0]
        let frame = try ZstdCompressor(dictionary: dictionary).compress(record)
        #expect(frame[4] & 0b100 != 0)
        var damaged = frame
        damaged[damaged.count - 2] ^= 0x10
        #expect(throws: StorageError.self) {
            try ZstdDecompressor(dictionaries: [dictionary]).decompress(damaged, maxOutputSize: 1 << 16)
        }
    }

    @Test func dictionariesReloadFromTheirBytes() throws {
        let trained = try ZstdDictionary.train(samples: Self.records(count: 500, seed: 8), capacity: 4096)
        let reloaded = try ZstdDictionary(bytes: trained.bytes)
        #expect(reloaded.id == trained.id)
        let record = Self.records(count: 1, seed: 9)[0]
        let frame = try ZstdCompressor(dictionary: trained).compress(record)
        #expect(try ZstdDecompressor(dictionaries: [reloaded]).decompress(frame, maxOutputSize: 1 << 16) == record)
    }

    @Test func trainingRejectsTooLittleInputClearly() throws {
        let tooFew = #expect(throws: StorageError.self) {
            try ZstdDictionary.train(samples: Self.records(count: 3, seed: 1), capacity: 4096)
        }
        #expect(tooFew?.description.contains("samples") == true)
        #expect(throws: StorageError.self) {
            try ZstdDictionary.train(samples: Self.records(count: 100, seed: 1), capacity: 100)
        }
        #expect(throws: StorageError.self) {
            try ZstdDictionary.train(samples: Array(repeating: [UInt8](), count: 100), capacity: 4096)
        }
    }

    @Test func bytesThatAreNotADictionaryAreRejected() throws {
        var generator = SeededGenerator(seed: 10)
        #expect(throws: StorageError.self) { try ZstdDictionary(bytes: generator.bytes(4096)) }
        #expect(throws: StorageError.self) { try ZstdDictionary(bytes: []) }
        // Right magic, garbage tables.
        let forged: [UInt8] = [0x37, 0xA4, 0x30, 0xEC, 0x01, 0x00, 0x00, 0x00] + generator.bytes(2048)
        #expect(throws: StorageError.self) { try ZstdDictionary(bytes: forged) }
    }

    @Test func framesWithoutDictionaryIDNeedTheDictionaryPassedExplicitly() throws {
        let dictionary = try ZstdDictionary.train(samples: Self.records(count: 1000, seed: 11), capacity: 4096)
        let other = try ZstdDictionary.train(samples: Self.records(count: 1000, seed: 12).map { $0.reversed() }, capacity: 4096)
        let record = Self.records(count: 1, seed: 13)[0]
        let compressor = try ZstdCompressor(dictionary: dictionary, includeDictionaryID: false)
        let frame = try compressor.compress(record)
        let withID = try ZstdCompressor(dictionary: dictionary).compress(record)
        #expect(ZstdDecompressor.dictionaryID(of: frame) == 0)
        #expect(frame.count < withID.count)

        let decompressor = try ZstdDecompressor()
        #expect(try decompressor.decompress(frame, dictionary: dictionary, maxOutputSize: 1 << 16) == record)
        // Missing or wrong dictionary: an error (zstd's checks or the frame checksum), never garbage.
        #expect(throws: StorageError.self) { try decompressor.decompress(frame, maxOutputSize: 1 << 16) }
        #expect(throws: StorageError.self) {
            try decompressor.decompress(frame, dictionary: other, maxOutputSize: 1 << 16)
        }
        // A frame that names its dictionary refuses a different one passed explicitly.
        #expect(throws: StorageError.unknownDictionary(id: dictionary.id)) {
            try decompressor.decompress(withID, dictionary: other, maxOutputSize: 1 << 16)
        }
    }

    @Test func aCompressorMayUseADictionaryAtAnotherLevel() throws {
        let dictionary = try ZstdDictionary.train(samples: Self.records(count: 1000, seed: 14), capacity: 4096)
        let compressor = try ZstdCompressor(level: 12, dictionary: dictionary)
        #expect(compressor.level == 12)
        #expect(try ZstdCompressor(dictionary: dictionary).level == dictionary.compressionLevel)
        let decompressor = try ZstdDecompressor(dictionaries: [dictionary])
        for record in Self.records(count: 20, seed: 15) {
            #expect(try decompressor.decompress(compressor.compress(record), maxOutputSize: 1 << 16) == record)
        }
    }
}
