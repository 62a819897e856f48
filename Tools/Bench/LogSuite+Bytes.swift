import CZstd
import CumulusLog
import CumulusStorage
import Foundation

extension LogSuite {
    /// What one bytes-on-disk run stored.
    struct SizeRun {
        /// Record-save frames, and their total stored bytes.
        var frames = 0
        var frameBytes = 0
        /// The same for frames compressed with the trained dictionary (after it was
        /// installed): the steady state of a log.
        var dictionaryFrames = 0
        var dictionaryFrameBytes = 0
        /// The zstd payloads inside those dictionary frames (the rest is framing).
        var dictionaryPayloadBytes = 0
        /// Sequence of the commit that installed the dictionary, if one was.
        var installedAt: UInt64?
        /// The size of LMDB's data file, and of its pages in use.
        var fileSize = 0
        var usedBytes = 0
        /// The record commits' own bytes (what the frames compress), read back from
        /// the log and re-encoded: exactly what the log compressed.
        var payloads: [[UInt8]] = []
    }

    /// Bytes per single-record commit with and without the trained dictionary, against
    /// what zstd achieves on the same commit bytes: with a dictionary trained on them
    /// and each compressed alone (the target), and all of them concatenated at -19.
    static func bytesOnDisk(_ workload: Workload, _ sizes: Sizes, _ report: Report) async throws {
        let count = sizes.bytes
        report.section("log: bytes on disk, \(count) single-record commits")
        let plain = try await sizeRun(workload, count: count, dictionary: false)
        let trained = try await sizeRun(workload, count: count, dictionary: true)
        guard plain.frames == count, trained.frames == count else {
            throw BenchFailure("size runs stored \(plain.frames) and \(trained.frames) record frames, expected \(count)")
        }
        let payloads = plain.payloads
        let uncompressed = Double(payloads.reduce(0) { $0 + $1.count }) / Double(count)

        // The practical ceiling: zstd -19 with the whole history as context.
        let concatenated = Array(payloads.joined())
        let ultra = try ZstdCompressor(level: 19).compress(concatenated).count
        // The target's reference: zstd's own dictionary workflow, payloads alone.
        let samples = Array(payloads.prefix(sizes.dictionarySamples))
        let dictionary = try ZstdDictionary.train(samples: samples, capacity: DictionaryPolicy().capacity)
        let withDictionary = try compressEach(payloads, dictionary: dictionary.bytes, level: 3)

        report.note(
            "references compress the same \(count) commits' bytes (read back from the log): dictionary of "
                + "\(DictionaryPolicy().capacity / 1024) KiB trained on the first \(samples.count), each commit "
                + "compressed alone at level 3 (zstd library defaults: content size and dictionary ID, no checksum)")
        if let at = trained.installedAt {
            report.note(
                "the writer installed its dictionary at commit \(at); \"after install\" counts the "
                    + "\(trained.dictionaryFrames) frames compressed with it")
        } else {
            report.note("the writer installed NO dictionary: \"after install\" figures are empty")
        }
        let perCommit = { (bytes: Int, frames: Int) in Double(bytes) / Double(max(1, frames)) }
        let reference = Figure(Double(withDictionary) / Double(count), "B/commit")
        let ceiling = Figure(Double(ultra) / Double(count), "B/commit")
        let steady = Figure(perCommit(trained.dictionaryFrameBytes, trained.dictionaryFrames), "B/commit")
        report.info("commit bytes, uncompressed", Figure(uncompressed, "B/commit"))
        report.compare("log frames, dictionary (after install)", steady, baseline: "zstd -3 + dict, each alone", reference, target: .atMost(1.2))
        report.compare("log frames, dictionary (after install)", steady, baseline: "zstd -19, concatenated", ceiling)
        report.compare(
            "  zstd payload inside those frames", Figure(perCommit(trained.dictionaryPayloadBytes, trained.dictionaryFrames), "B/commit"),
            baseline: "zstd -3 + dict, each alone", reference)
        report.info(
            "  frame header + chain hash + CRC",
            Figure(perCommit(trained.dictionaryFrameBytes - trained.dictionaryPayloadBytes, trained.dictionaryFrames), "B/commit"))
        report.compare(
            "log frames, dictionary (all \(count))", Figure(perCommit(trained.frameBytes, trained.frames), "B/commit"),
            baseline: "zstd -3 + dict, each alone", reference)
        report.compare(
            "log frames, no dictionary", Figure(perCommit(plain.frameBytes, plain.frames), "B/commit"),
            baseline: "zstd -3 + dict, each alone", reference)
        report.compare(
            "LMDB data file, dictionary", Figure(perCommit(trained.fileSize, count), "B/commit"),
            baseline: "its frames alone", Figure(perCommit(trained.frameBytes, trained.frames), "B/commit"))
        report.compare(
            "LMDB data file, no dictionary", Figure(perCommit(plain.fileSize, count), "B/commit"),
            baseline: "its frames alone", Figure(perCommit(plain.frameBytes, plain.frames), "B/commit"))
    }

    /// Appends the first `count` workload commits through a `LogWriter` (64 concurrent
    /// submitters, default policy or dictionaries off) and measures what was stored.
    private static func sizeRun(_ workload: Workload, count: Int, dictionary: Bool) async throws -> SizeRun {
        let directory = ScratchDirectory("log-bytes")
        defer { directory.remove() }
        let store = try openLog(directory)
        var options = LogWriter.Options()
        options.dictionary.enabled = dictionary
        let writer = LogWriter(store: store, options: options)
        do {
            try await appendConcurrently(writer, workload.requests, 0..<count, submitters: 64)
            // Training runs in the background; give it time to land before closing
            // (closing would refuse its installing commit).
            let deadline = ContinuousClock.now + .seconds(60)
            while dictionary && store.currentDictionaryID == nil && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
        } catch {
            writer.close()
            throw error
        }
        writer.close()

        var run = SizeRun()
        try store.commits(from: 1) { commit in
            if commit.events.contains(where: { if case .dictionaryInstalled = $0 { true } else { false } }) {
                run.installedAt = commit.sequence
            } else {
                run.payloads.append(try CommitCodec.encode(commit))
            }
            return true
        }
        let table = try DataLayout.open(.log, in: store.logEnvironment)
        let installedAt = run.installedAt
        try store.logEnvironment.read { txn in
            try txn.scan(table) { _, value in
                let frame = try Frame(parsing: value, expectedSequence: nil)
                guard frame.sequence != installedAt else { return true }
                run.frames += 1
                run.frameBytes += value.count
                if frame.dictionaryID != 0 {
                    run.dictionaryFrames += 1
                    run.dictionaryFrameBytes += value.count
                    run.dictionaryPayloadBytes += frame.payload.count
                }
                return true
            }
        }
        run.usedBytes = try store.logEnvironment.info().usedBytes
        run.fileSize = directory.logFileSize
        return run
    }

    /// Total size of `payloads` each compressed alone with the dictionary, through
    /// zstd's plain one-shot API (its default frame parameters).
    private static func compressEach(_ payloads: [[UInt8]], dictionary: [UInt8], level: Int32) throws -> Int {
        guard let context = ZSTD_createCCtx() else { throw BenchFailure("ZSTD_createCCtx failed") }
        defer { ZSTD_freeCCtx(context) }
        let prepared = dictionary.withUnsafeBytes { ZSTD_createCDict($0.baseAddress, $0.count, level) }
        guard let prepared else { throw BenchFailure("ZSTD_createCDict failed") }
        defer { ZSTD_freeCDict(prepared) }
        var total = 0
        for payload in payloads {
            var result = 0
            let output = [UInt8](unsafeUninitializedCapacity: ZSTD_compressBound(payload.count)) { buffer, count in
                result = payload.withUnsafeBytes { source in
                    ZSTD_compress_usingCDict(context, buffer.baseAddress, buffer.count, source.baseAddress, source.count, prepared)
                }
                count = ZSTD_isError(result) != 0 ? 0 : result
            }
            guard ZSTD_isError(result) == 0 else { throw BenchFailure("ZSTD_compress_usingCDict failed") }
            total += output.count
        }
        return total
    }
}
