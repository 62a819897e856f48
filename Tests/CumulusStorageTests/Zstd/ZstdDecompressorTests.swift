import Testing

@testable import CumulusStorage

@Suite("zstd decompression of hostile input")
struct ZstdDecompressorTests {
    let sample = Array(String(repeating: "{\"id\":42,\"name\":\"record\",\"tags\":[\"a\",\"b\"]}", count: 50).utf8)

    @Test func flippingAnyByteIsDetected() throws {
        let frame = try ZstdCompressor().compress(sample)
        let decompressor = try ZstdDecompressor()
        for index in frame.indices {
            for bit in [0, 3, 7] {
                var damaged = frame
                damaged[index] ^= UInt8(1 << bit)
                // The checksum (and header checks) must turn every change into an error,
                // never into silently different output.
                if let output = try? decompressor.decompress(damaged, maxOutputSize: 1 << 20) {
                    #expect(output == sample, "byte \(index) bit \(bit) produced different output")
                }
            }
        }
        var lastByteFlipped = frame
        lastByteFlipped[frame.count - 1] ^= 0xFF  // inside the checksum
        let error = #expect(throws: StorageError.self) {
            try decompressor.decompress(lastByteFlipped, maxOutputSize: 1 << 20)
        }
        #expect(error?.isCorruption == true)
    }

    @Test func everyTruncationIsAnError() throws {
        let frame = try ZstdCompressor().compress(sample)
        let decompressor = try ZstdDecompressor()
        for length in 0..<frame.count {
            #expect(throws: StorageError.self) {
                try decompressor.decompress(Array(frame[0..<length]), maxOutputSize: 1 << 20)
            }
        }
    }

    @Test func outputLimitIsEnforcedBeforeAllocating() throws {
        let zeros = [UInt8](repeating: 0, count: 1_000_000)
        let frame = try ZstdCompressor().compress(zeros)
        let decompressor = try ZstdDecompressor()
        #expect(throws: StorageError.sizeLimitExceeded(size: 1_000_000, limit: 999_999)) {
            try decompressor.decompress(frame, maxOutputSize: 999_999)
        }
        #expect(try decompressor.decompress(frame, maxOutputSize: 1_000_000) == zeros)

        // A forged header claiming 1 TiB: refused from the header alone.
        var forged: [UInt8] = [0x28, 0xB5, 0x2F, 0xFD, 0xE0]  // magic; single segment, 8-byte size
        forged += withUnsafeBytes(of: UInt64(1 << 40).littleEndian, Array.init)
        forged += [0x01, 0x00, 0x00]  // last raw block, empty
        #expect(throws: StorageError.sizeLimitExceeded(size: 1 << 40, limit: 1 << 30)) {
            try decompressor.decompress(forged, maxOutputSize: 1 << 30)
        }
    }

    @Test func framesWithoutContentSizeAreRefused() throws {
        // magic; descriptor 0 (no size field, not single segment); window byte; one last
        // raw block of 5 bytes.
        let frame: [UInt8] = [0x28, 0xB5, 0x2F, 0xFD, 0x00, 0x00, 0x29, 0x00, 0x00] + [UInt8]("hello")
        let error = #expect(throws: StorageError.self) { try ZstdDecompressor().decompress(frame, maxOutputSize: 100) }
        #expect(error?.isCorruption == true)
    }

    @Test func trailingBytesAndSkippableFramesAreRefused() throws {
        let frame = try ZstdCompressor().compress(sample)
        let decompressor = try ZstdDecompressor()
        #expect(throws: StorageError.self) { try decompressor.decompress(frame + [0], maxOutputSize: 1 << 20) }
        #expect(throws: StorageError.self) { try decompressor.decompress(frame + frame, maxOutputSize: 1 << 20) }
        let skippable: [UInt8] = [0x50, 0x2A, 0x4D, 0x18, 0x02, 0x00, 0x00, 0x00, 0xAA, 0xBB]
        #expect(throws: StorageError.self) { try decompressor.decompress(skippable, maxOutputSize: 1 << 20) }
        #expect(throws: StorageError.self) { try decompressor.decompress([UInt8](), maxOutputSize: 1 << 20) }
    }

    @Test func fuzzedInputNeverCrashesOrExceedsTheLimit() throws {
        var generator = SeededGenerator(seed: 0xF022)
        let decompressor = try ZstdDecompressor()
        let valid = try [sample, [UInt8](repeating: 1, count: 10_000), [UInt8]("x")].map { try ZstdCompressor().compress($0) }
        var accepted = 0
        for round in 0..<20_000 {
            var input: [UInt8]
            switch round % 3 {
            case 0:
                input = generator.bytes(Int.random(in: 0...300, using: &generator))
            case 1:
                // Valid magic, random rest: reaches zstd's header and block parsers.
                input = [0x28, 0xB5, 0x2F, 0xFD] + generator.bytes(Int.random(in: 0...300, using: &generator))
            default:
                // A valid frame with a few random byte changes.
                input = valid[round % valid.count]
                for _ in 0..<Int.random(in: 1...4, using: &generator) {
                    input[Int.random(in: 0..<input.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
                }
            }
            if let output = try? decompressor.decompress(input, maxOutputSize: 64 * 1024) {
                #expect(output.count <= 64 * 1024)
                accepted += 1
            }
        }
        // Some mutations hit only unused header bits; nearly all must be rejected.
        #expect(accepted < 1_000)
    }

    @Test("decompressing into the reused buffer gives what decompress gives, growing it, and refuses what it refuses")
    func reusedBufferAgreesWithDecompress() throws {
        var generator = SeededGenerator(seed: 0xB0FF)
        let decompressor = try ZstdDecompressor()
        // Sizes that grow past the first buffer and shrink again, so stale bytes from a
        // larger frame would show if the result's length were wrong.
        let beyond = ZstdDecompressor.retainedScratchLimit + 1_000
        for size in [10, 5_000, 100, 70_000, 3, 0, beyond, 20_000] {
            let input = generator.bytes(size / 2) + [UInt8](repeating: 7, count: size - size / 2)
            let frame = try ZstdCompressor().compress(input)
            let copied = try frame.withUnsafeBytes { bytes in
                try decompressor.withDecompressed(bytes, maxOutputSize: 8 << 20) { Array($0) }
            }
            #expect(copied == input, "size \(size)")
        }
        let frame = try ZstdCompressor().compress(sample)
        for length in [0, 3, frame.count / 2, frame.count - 1] {
            #expect(throws: StorageError.self) {
                try Array(frame[0..<length]).withUnsafeBytes { part in
                    try decompressor.withDecompressed(part, maxOutputSize: 1 << 20) { _ in () }
                }
            }
        }
        #expect(throws: StorageError.sizeLimitExceeded(size: UInt64(sample.count), limit: 10)) {
            try frame.withUnsafeBytes { try decompressor.withDecompressed($0, maxOutputSize: 10) { _ in () } }
        }
        // The body's own errors pass through, and the decompressor stays usable.
        struct Stop: Error {}
        #expect(throws: Stop.self) {
            try frame.withUnsafeBytes { try decompressor.withDecompressed($0, maxOutputSize: 1 << 20) { _ in throw Stop() } }
        }
        #expect(try frame.withUnsafeBytes { try decompressor.withDecompressed($0, maxOutputSize: 1 << 20) { Array($0) } } == sample)
    }
}
