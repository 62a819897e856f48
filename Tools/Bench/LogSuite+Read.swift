import CumulusLog
import CumulusModel
import CumulusStorage
import Foundation

extension LogSuite {
    /// Sequential read and decode of the whole bulk log (`LogStore.commits(from: 1)`)
    /// against a raw LMDB cursor scan of the same `log` table, both with the pages in
    /// the page cache. Between them, the cost of each stage the log adds.
    static func sequentialRead(_ log: BulkLog, _ report: Report) throws {
        report.section("log: sequential read of \(log.commits + 1) commits (warm)")
        report.note(
            "raw: MDB_NEXT over the log table touching each value's first byte; floor: the same scan plus zstd "
                + "decompression of each payload into a reused buffer; log: LogStore.commitViews(from: 1), each commit's "
                + "header decoded and its events left encoded, then LogStore.commits(from: 1), every event decoded; "
                + "best of 3 each after a warm-up scan, and the stages by hand")

        // The raw environment must be closed before LogStore opens the same files:
        // LMDB's locks are per process, and closing a second handle drops the first's.
        var rawBest = 0.0
        var rawCount = 0
        do {
            let raw = try RawLMDB(path: DataLayout.logPath(log.directory.path), mapSize: bulkMapSize, readOnly: true)
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
        let table = try DataLayout.open(.log, in: store.logEnvironment)

        // The floor a reader of this log cannot go below (issue 14): the same cursor
        // scan plus zstd decompression of every payload into one reused buffer, the
        // frame header skipped by hand (no checksum, no decode).
        let decompressor = try ZstdDecompressor()
        var floorBest = 0.0
        var inflated = 0
        for _ in 0..<3 {
            inflated = 0
            let elapsed = try measure {
                try store.logEnvironment.read { txn in
                    try txn.scan(table) { _, value in
                        let payload = try rawPayload(value)
                        if payload.compressed {
                            let dictionary = payload.dictionaryID == log.dictionary.id ? log.dictionary : nil
                            inflated &+= try decompressor.withDecompressed(
                                payload.bytes, dictionary: dictionary, maxOutputSize: Frame.maxUncompressedLength
                            ) { $0.count }
                        } else {
                            inflated &+= payload.bytes.count
                        }
                        return true
                    }
                }
            }
            floorBest = max(floorBest, Double(rawCount) / elapsed)
        }
        let floor = Figure(floorBest, "frames/s")

        // The read a reader of commits gets: each frame checked, decompressed and its
        // commit's header decoded (`LogStore.commitViews`), its events left encoded
        // until asked for; the time and event count are read so the header is used.
        var viewed = 0
        var events = 0
        var newest = Timestamp(millisecondsSince1970: 0)
        var header = Double.infinity
        for _ in 0..<3 {
            viewed = 0
            events = 0
            header = min(header, try measure {
                try store.commitViews(from: 1) { view in
                    viewed += 1
                    events &+= view.eventCount
                    newest = max(newest, view.timestamp)
                    return true
                }
            })
        }
        guard viewed == rawCount, events >= viewed else {
            throw BenchFailure("log views read \(viewed) commits (\(events) events), raw scan \(rawCount)")
        }
        // Every event decoded too (`LogStore.commits`): what replay, rebuild and export pay.
        var decoded = 0
        var full = Double.infinity
        for _ in 0..<3 {
            decoded = 0
            full = min(full, try measure {
                try store.commits(from: 1) { _ in
                    decoded += 1
                    return true
                }
            })
        }
        guard decoded == rawCount else { throw BenchFailure("log read \(decoded) commits, raw scan \(rawCount)") }
        report.compare(
            "sequential read, commit views commits/s", Figure(Double(viewed) / header, "commits/s"),
            baseline: "raw scan + zstd", floor, target: .atLeast(0.5))
        report.compare(
            "  (every event decoded too)", Figure(Double(decoded) / full, "commits/s"), baseline: "raw scan + zstd", floor)
        report.compare(
            "  (every event decoded, beside the raw scan alone)", Figure(Double(decoded) / full, "commits/s"),
            baseline: "raw LMDB cursor scan", rawRate)

        // Stages, to show where the time goes: the frame parse (CRC-32C, header),
        // then the floor's zstd, the remainder being the commit decoding itself.
        var parsedBytes = 0
        let parse = try measure {
            try store.logEnvironment.read { txn in
                try txn.scan(table) { _, value in
                    parsedBytes &+= try FrameView(parsing: value, expectedSequence: nil).payload.count
                    return true
                }
            }
        }
        report.compare(
            "  stage: frame parse + CRC", Figure(Double(rawCount) / parse, "frames/s"), baseline: "raw LMDB cursor scan",
            rawRate)
        let unzip = 1 / floorBest * Double(rawCount)
        let decodeOnly = max(full - unzip - parse, 1e-9)
        report.info("  stage: commit decode alone", Figure(Double(rawCount) / decodeOnly, "commits/s"))
        report.detail(
            "  µs per commit: scan+zstd / parse / decode",
            String(
                format: "%.2f / %.2f / %.2f (CRC-32C: %@)", unzip / Double(rawCount) * 1e6, parse / Double(rawCount) * 1e6,
                decodeOnly / Double(rawCount) * 1e6, CRC32C.usesHardware ? "CPU instruction" : "table"))
    }

    /// A stored frame's payload found by skipping its header by hand (format, flags,
    /// three varints, the chain hash) and its CRC: what the floor measurement reads.
    private static func rawPayload(_ value: UnsafeRawBufferPointer) throws
        -> (bytes: UnsafeRawBufferPointer, compressed: Bool, dictionaryID: UInt32)
    {
        var reader = BinaryReader(UnsafeRawBufferPointer(rebasing: value[..<(value.count - 4)]), context: "frame")
        _ = try reader.u8()
        let flags = try reader.u8()
        _ = try reader.varint()
        let dictionaryID = UInt32(truncatingIfNeeded: try reader.varint())
        _ = try reader.varint()
        _ = try reader.rawSlice(Frame.hashLength)
        return (try reader.rawSlice(reader.remaining), flags & Frame.compressedFlag != 0, dictionaryID)
    }
}
