import Foundation
import Testing

@testable import CumulusStorage

@Suite("zstd compression")
struct ZstdCompressorTests {
    let limit = 64 * 1024 * 1024

    @Test(arguments: [0, 1, 5, 100, 4096])
    func smallInputsRoundTrip(size: Int) throws {
        var generator = SeededGenerator(seed: UInt64(size))
        let input = generator.bytes(size)
        let frame = try ZstdCompressor().compress(input)
        #expect(try ZstdDecompressor().decompress(frame, maxOutputSize: limit) == input)
    }

    @Test func largeInputsRoundTripAndCompressibleOnesShrink() throws {
        var generator = SeededGenerator(seed: 1)
        let random = generator.bytes(3_000_000)
        let text = Array(String(repeating: "the quick brown fox jumps over the lazy dog. ", count: 200_000).utf8)
        let compressor = try ZstdCompressor()
        let decompressor = try ZstdDecompressor()
        for input in [random, text] {
            let frame = try compressor.compress(input)
            #expect(try decompressor.decompress(frame, maxOutputSize: limit) == input)
        }
        #expect(try compressor.compress(text).count < text.count / 100)
    }

    @Test func framesRecordContentSizeAndChecksum() throws {
        let input = [UInt8]("hello, hello, hello, hello")
        let frame = try ZstdCompressor().compress(input)
        #expect(ZstdDecompressor.declaredContentSize(of: frame) == UInt64(input.count))
        // Frame header descriptor (byte 4): bit 2 is the content checksum flag.
        #expect(frame[4] & 0b100 != 0)
        #expect(ZstdDecompressor.dictionaryID(of: frame) == 0)
    }

    @Test func levelsAreValidatedAndAllRoundTrip() throws {
        #expect(throws: StorageError.self) { try ZstdCompressor(level: 1000) }
        let input = Array(String(repeating: "abcabcabd", count: 1000).utf8)
        for level: Int32 in [-5, 1, 3, 19] {
            let compressor = try ZstdCompressor(level: level)
            #expect(compressor.level == level)
            #expect(try ZstdDecompressor().decompress(compressor.compress(input), maxOutputSize: limit) == input)
        }
    }

    @Test func oneCompressorIsSafeToShareAcrossThreads() throws {
        let compressor = try ZstdCompressor()
        let decompressor = try ZstdDecompressor()
        let failures = ManagedFailures()
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            var generator = SeededGenerator(seed: UInt64(worker))
            for round in 0..<50 {
                let input = Array("worker \(worker) round \(round) ".utf8) + generator.bytes(round * 10)
                do {
                    let output = try decompressor.decompress(compressor.compress(input), maxOutputSize: 1 << 20)
                    if output != input { failures.record() }
                } catch {
                    failures.record()
                }
            }
        }
        #expect(failures.count == 0)
    }
}

/// A thread-safe failure counter for `concurrentPerform` bodies.
final class ManagedFailures: Sendable {
    private let lock = NSLock()
    nonisolated(unsafe) private var value = 0

    func record() { lock.withLock { value += 1 } }
    var count: Int { lock.withLock { value } }
}
