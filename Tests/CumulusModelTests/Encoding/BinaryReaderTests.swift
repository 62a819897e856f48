import Testing

@testable import CumulusModel

@Suite("Binary reader")
struct BinaryReaderTests {
    @Test("isASCII finds a high bit at every position of strings of 0 to 40 bytes, at every alignment")
    func isASCIIFindsEveryHighByte() {
        for offset in 0..<8 {
            for length in 0...40 {
                var bytes = [UInt8](repeating: 0x7F, count: offset + length)
                bytes.withUnsafeBytes { buffer in
                    #expect(BinaryReader.isASCII(UnsafeRawBufferPointer(rebasing: buffer[offset...])), "length \(length)")
                }
                for position in 0..<length {
                    for high: UInt8 in [0x80, 0xC3, 0xFF] {
                        bytes[offset + position] = high
                        let found = bytes.withUnsafeBytes { buffer in
                            BinaryReader.isASCII(UnsafeRawBufferPointer(rebasing: buffer[offset...]))
                        }
                        #expect(!found, "length \(length), byte \(position) = \(high), offset \(offset)")
                        bytes[offset + position] = 0x7F
                    }
                }
            }
        }
    }

    @Test("well-formed UTF-8 is what String(validating:) accepts: every one- and two-byte sequence, edges of each range, random mixes")
    func wellFormedUTF8() {
        func agrees(_ bytes: [UInt8]) -> Bool {
            let ours = bytes.withUnsafeBytes { BinaryReader.isWellFormedUTF8($0) }
            return ours == (String(validating: bytes, as: UTF8.self) != nil)
        }
        for first in 0...255 {
            #expect(agrees([UInt8(first)]), "\(first)")
            for second in 0...255 { #expect(agrees([UInt8(first), UInt8(second)]), "\(first) \(second)") }
        }
        // Every lead of three and four bytes with the edges of each continuation range.
        let edges: [UInt8] = [0x00, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xFF]
        for lead in 0xE0...0xF7 {
            for second in edges {
                for third in edges {
                    #expect(agrees([UInt8(lead), second, third]))
                    for fourth in edges { #expect(agrees([UInt8(lead), second, third, fourth])) }
                }
            }
        }
        var random = SystemRandomNumberGenerator()
        let pieces: [[UInt8]] = [
            Array("plain ascii text".utf8), Array("é".utf8), Array("€".utf8), Array("😀".utf8), [0x80], [0xC3], [0xED, 0xA0, 0x80],
            [0xF4, 0x90, 0x80, 0x80], [0xE0, 0x80, 0x80], [0xFF],
        ]
        for _ in 0..<20_000 {
            var bytes: [UInt8] = []
            for _ in 0..<Int.random(in: 0...10, using: &random) { bytes += pieces.randomElement(using: &random)! }
            #expect(agrees(bytes), "\(bytes)")
        }
    }
}
