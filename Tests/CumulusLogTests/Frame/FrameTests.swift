@testable import CumulusLog
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
