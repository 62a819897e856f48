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
}
