import CumulusLog
import CumulusStorage
import Foundation

extension LogSuite {
    /// Sequential read and decode of the whole bulk log (`LogStore.commits(from: 1)`)
    /// against a raw LMDB cursor scan of the same `log` table, both with the pages in
    /// the page cache. Between them, the cost of each stage the log adds.
    static func sequentialRead(_ log: BulkLog, _ report: Report) throws {
        report.section("log: sequential read of \(log.commits + 1) commits (warm)")
        report.note(
            "raw: MDB_NEXT over the log table touching each value's first byte, best of 3 after a warm-up scan; "
                + "log: LogStore.commits(from: 1), and its stages by hand")

        // The raw environment must be closed before LogStore opens the same files:
        // LMDB's locks are per process, and closing a second handle drops the first's.
        var rawBest = 0.0
        var rawCount = 0
        do {
            let raw = try RawLMDB(path: log.directory.path, mapSize: bulkMapSize, readOnly: true)
            _ = try raw.scan()
            for _ in 0..<3 {
                var result = (count: 0, checksum: UInt64(0))
                let elapsed = try measure { result = try raw.scan() }
                rawCount = result.count
                rawBest = max(rawBest, Double(result.count) / elapsed)
            }
        }
        let rawRate = Figure(rawBest, "commits/s")

        let store = try openLog(log.directory, mapSize: bulkMapSize)
        let table = try DataLayout.open(.log, in: store.environment)
        var decoded = 0
        let full = try measure {
            try store.commits(from: 1) { _ in
                decoded += 1
                return true
            }
        }
        guard decoded == rawCount else { throw BenchFailure("log read \(decoded) commits, raw scan \(rawCount)") }
        report.compare(
            "sequential read+decode commits/s", Figure(Double(decoded) / full, "commits/s"),
            baseline: "raw LMDB cursor scan", rawRate, target: .atLeast(0.3))

        // Stages, to show where the time goes: parse (CRC-32C, header, payload copy),
        // then zstd, the remainder being the commit decoding itself.
        var parsedBytes = 0
        let parse = try measure {
            try store.environment.read { txn in
                try txn.scan(table) { _, value in
                    parsedBytes &+= try Frame(parsing: value, expectedSequence: nil).payload.count
                    return true
                }
            }
        }
        report.compare(
            "  stage: frame parse + CRC", Figure(Double(rawCount) / parse, "frames/s"), baseline: "raw LMDB cursor scan",
            rawRate)
        let decompressor = try ZstdDecompressor()
        var inflated = 0
        let unzip = try measure {
            try store.environment.read { txn in
                try txn.scan(table) { _, value in
                    let frame = try Frame(parsing: value, expectedSequence: nil)
                    if frame.isCompressed {
                        let dictionary = frame.dictionaryID == log.dictionary.id ? log.dictionary : nil
                        inflated &+= try decompressor.decompress(
                            frame.payload, dictionary: dictionary, maxOutputSize: frame.uncompressedLength
                        ).count
                    } else {
                        inflated &+= frame.payload.count
                    }
                    return true
                }
            }
        }
        report.compare(
            "  stage: + zstd decompress", Figure(Double(rawCount) / unzip, "frames/s"), baseline: "raw LMDB cursor scan",
            rawRate)
        let decodeOnly = max(full - unzip, 1e-9)
        report.info("  stage: commit decode alone", Figure(Double(rawCount) / decodeOnly, "commits/s"))
        report.detail(
            "  µs per commit: parse / zstd / decode",
            String(
                format: "%.2f / %.2f / %.2f", parse / Double(rawCount) * 1e6, (unzip - parse) / Double(rawCount) * 1e6,
                decodeOnly / Double(rawCount) * 1e6))
    }
}
