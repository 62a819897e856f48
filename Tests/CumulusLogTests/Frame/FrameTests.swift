@testable import CumulusLog
import CumulusModel
import CumulusTestSupport
import Testing

@Suite("Frames")
struct FrameTests {
    let frame = Frame(
        sequence: 300, dictionaryID: 2, isCompressed: true, uncompressedLength: 1234,
        chainHash: (0..<32).map { UInt8($0) }, payload: Array("payload bytes".utf8))

    @Test("a frame round-trips through its stored bytes")
    func roundTrip() throws {
        let parsed = try Frame(parsing: frame.encoded(), expectedSequence: 300)
        #expect(parsed == frame)
    }

    @Test("every single flipped byte is caught")
    func everyFlipIsCaught() {
        let bytes = frame.encoded()
        for index in bytes.indices {
            for bit in [UInt8(0x01), 0x80] {
                var damaged = bytes
                damaged[index] ^= bit
                #expect(throws: LogError.self) { try Frame(parsing: damaged, expectedSequence: 300) }
            }
        }
    }

    @Test("a frame stored under the wrong sequence is refused")
    func wrongSequence() {
        #expect(throws: LogError.self) { try Frame(parsing: frame.encoded(), expectedSequence: 301) }
    }

    @Test("CRC-32C matches the standard check value")
    func crcCheckValue() {
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.checksum([UInt8]()) == 0)
        #expect(Array("123456789".utf8).withUnsafeBytes { CRC32C.tableChecksum($0) } == 0xE306_9283)
    }

    @Test("the CPU's CRC-32C instruction and the table agree on every length and alignment")
    func hardwareAgreesWithTable() {
        var generator = SeededRandom(seed: 0x0C0_0014)
        let bytes = (0..<4_200).map { _ in UInt8.random(in: 0...255, using: &generator) }
        bytes.withUnsafeBytes { all in
            for start in 0..<9 {
                for length in [0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 63, 64, 65, 255, 1_000, 4_096] {
                    let slice = UnsafeRawBufferPointer(rebasing: all[start..<start + length])
                    #expect(CRC32C.checksum(slice) == CRC32C.tableChecksum(slice), "start \(start), length \(length)")
                }
            }
        }
    }
}

/// One bound on commits, which the writer enforces and readers and followers rely on.
@Suite("The largest commit")
struct LargestCommitTests {
    @Test("a frame of the largest commit, with its largest header, fits the largest stored frame")
    func largestFrameFits() {
        let header = Frame(
            sequence: .max, dictionaryID: .max, isCompressed: false, uncompressedLength: Frame.maxUncompressedLength,
            chainHash: Array(repeating: 0, count: Frame.hashLength), payload: []
        ).encoded()
        #expect(header.count + Frame.maxUncompressedLength <= Frame.maxEncodedLength)
    }

    @Test("a commit over the bound is refused with limitExceeded before anything is written; one at it is not")
    func overTheBoundRefused() throws {
        #expect(throws: Never.self) { try AppendSession.checkCommitLength(Frame.maxUncompressedLength) }
        do {
            try AppendSession.checkCommitLength(Frame.maxUncompressedLength + 1)
            Issue.record("a commit one byte over the bound was taken")
        } catch {
            #expect(error.code == .limitExceeded)
            #expect(error.message.contains("Split it"))
        }
    }

    @Test("The largest operation allowed, 400 records of 1 MiB, fits one commit with room to spare")
    func largestOperationFits() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = try openStore(directory)
        var rng = SeededRandom(seed: 40)
        var request = sampleRequest(0, rng: &rng)
        guard case .recordSaved(let database, var record, let keys) = request.events[0] else {
            Issue.record("the sample is not a save")
            return
        }
        record["blob"] = .bytes(Array(repeating: 0xA5, count: 64 << 10))
        let recordBytes = try RecordCodec.encode(record).count
        // What one more save adds to a commit, past the record's own bytes, measured.
        var sizes: [Int] = []
        try store.environment.write { txn in
            var session = try store.beginAppend(in: txn)
            for count in [1, 2] {
                request.events = Array(repeating: .recordSaved(database: database, record: record, changedKeys: keys), count: count)
                sizes.append(try session.append(request, now: Timestamp(millisecondsSince1970: 0), in: txn).bytes.count)
            }
            _ = try session.finish(in: txn)
        }
        let perSave = sizes[1] - sizes[0]
        let overhead = perSave - recordBytes
        let largest = sizes[0] - perSave + Limits.maxItemsPerOperation * (Limits.maxRecordSize + overhead)
        #expect(overhead < 1 << 10, "each save adds \(overhead) bytes besides its record")
        #expect(largest < Frame.maxUncompressedLength * 9 / 10, "the largest operation encodes to about \(largest) bytes")
    }
}
