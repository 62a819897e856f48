import CumulusFuzzTargets
import Foundation
import Testing

/// The fuzz targets without the fuzzer: the kept corpus (`Tools/Fuzz/Corpus`, the
/// seeds and every input a fuzz run found to crash) replayed on each test run, so a
/// fixed crash stays fixed and a format change that breaks the seeds is seen here.
@Suite("Fuzz corpus")
struct CorpusTests {
    static let corpus = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Tools/Fuzz/Corpus")

    static func inputs(of target: FuzzTarget) throws -> [(name: String, bytes: [UInt8])] {
        let directory = corpus.appendingPathComponent(target.rawValue)
        return try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted().map { name in
            (name, Array(try Data(contentsOf: directory.appendingPathComponent(name))))
        }
    }

    @Test("every kept input runs without a finding, and some are accepted", arguments: FuzzTarget.allCases)
    func keptCorpus(target: FuzzTarget) async throws {
        let inputs = try Self.inputs(of: target)
        #expect(!inputs.isEmpty)
        var accepted = 0
        for input in inputs {
            let outcome = await target.run(input.bytes)
            #expect(!outcome.isBroken, "\(target.rawValue)/\(input.name): \(outcome)")
            if outcome == .accepted { accepted += 1 }
        }
        #expect(accepted > 0, "no kept input of \(target.rawValue) gets past its parser")
    }

    @Test("the seeds the current code makes are accepted; noise is refused", arguments: FuzzTarget.allCases)
    func seeds(target: FuzzTarget) async throws {
        let seeds = try await target.seeds()
        #expect(!seeds.isEmpty)
        for (index, seed) in seeds.enumerated() {
            let outcome = await target.run(seed)
            #expect(outcome == .accepted, "\(target.rawValue) seed \(index): \(outcome)")
        }
        // Bytes no encoder makes (for the API: a body that is not JSON).
        let noise: [UInt8] = [0x01, 0xFF, 0x00, 0x7B, 0x22, 0xC3, 0x28, 0xFE, 0x10, 0x80, 0x00, 0x00, 0x00, 0x05, 0xEE, 0x5B]
        let outcome = await target.run(noise)
        guard case .refused = outcome else {
            Issue.record("\(target.rawValue) did not refuse noise: \(outcome)")
            return
        }
    }
}
