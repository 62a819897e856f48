import CumulusLog
import CumulusModel
import CumulusStorage
import Foundation

/// `verify`: proves the live views are exactly what the log implies, and that the
/// log's hash chain holds. It replays the log into views in a scratch environment,
/// compares a digest of every table with the live one, and names the first key
/// that differs in any table that does not match.
public enum ViewVerifier {
    /// One table's comparison.
    public struct TableResult: Sendable, Hashable {
        /// Digest of the live table.
        public var live: ViewDigest
        /// Digest of the table rebuilt from the log.
        public var rebuilt: ViewDigest
        /// The first key (hex) at which the two differ, when they do.
        public var firstDifference: String?

        /// Whether the table matches its rebuild.
        public var matches: Bool { live.hash == rebuilt.hash }
    }

    /// Everything `verify` found.
    public struct Report: Sendable {
        /// The hash chain check.
        public var chain: ChainReport
        /// Per view table (none when the views could not be replayed: ``viewsNotCompared``).
        public var tables: [TableResult]
        /// Why the views were not compared with the log, if they were not: a log that
        /// dropped its oldest commits cannot be replayed into views.
        public var viewsNotCompared: String?
        /// One line per asset file a reachable record version refers to that is
        /// missing or whose bytes do not hash to its name (filled by the engine,
        /// which owns the asset store).
        public var assetProblems: [String] = []
        /// How many asset files were checked.
        public var assetsChecked = 0

        /// Whether the chain holds, every table compared matches and every asset is sound.
        public var isHealthy: Bool { chain.isIntact && tables.allSatisfy(\.matches) && assetProblems.isEmpty }

        /// A line per finding, for operators.
        public var lines: [String] {
            var lines = [chain.description]
            if let viewsNotCompared { lines.append("views not compared: \(viewsNotCompared)") }
            for table in tables {
                if table.matches {
                    lines.append("view \(table.live): matches the log")
                } else {
                    lines.append(
                        "view \(table.live.table) DIFFERS from the log: live \(table.live.entries) entries, rebuilt "
                            + "\(table.rebuilt.entries); first difference at key \(table.firstDifference ?? "?")")
                }
            }
            if assetProblems.isEmpty {
                lines.append("assets: \(assetsChecked) referenced files present, each hashing to its name")
            } else {
                lines += assetProblems.map { "asset DAMAGED: \($0)" }
            }
            return lines
        }
    }

    /// Verifies `views` (live, in `store`'s environment) against the log. Uses a
    /// scratch directory under `scratchDirectory` (default: the system's temp dir),
    /// removed afterwards. `progress` gets (phase, count).
    public static func verify(
        _ views: Views, store: LogStore, scratchDirectory: String? = nil,
        progress: ((String, UInt64) -> Void)? = nil
    ) throws -> Report {
        let chain = try store.verifyChain { progress?("chain", $0) }
        let first = store.firstRetained
        guard first <= 1 else {
            // Retention dropped the commits the views were first built from: the chain
            // from the first retained commit is all that can be proved.
            return Report(
                chain: chain, tables: [],
                viewsNotCompared: "the log starts at commit \(first) (retention dropped the earlier ones); "
                    + "views can be replayed only from a whole log")
        }
        let scratchPath = (scratchDirectory ?? NSTemporaryDirectory()) + "/cumulus-verify-\(UUID.random().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: scratchPath) }
        var results: [TableResult] = []
        do {
            var options = LMDBEnvironment.Options()
            options.durable = false  // scratch data: nothing to lose
            let scratch = try LMDBEnvironment(path: scratchPath, options: options)
            let rebuilt = try Views(environment: scratch)
            try ViewRebuilder.replay(store, into: rebuilt, in: scratch) { progress?("replay", $0) }
            try store.environment.read { live in
                try scratch.read { fresh in
                    let liveEntries = try ViewEntries.all(of: views.tables, in: live)
                    let freshEntries = try ViewEntries.all(of: rebuilt.tables, in: fresh)
                    for (a, b) in zip(liveEntries, freshEntries) {
                        var result = TableResult(live: try ViewDigest.of(a), rebuilt: try ViewDigest.of(b))
                        if !result.matches { result.firstDifference = try firstDifference(a, b) }
                        results.append(result)
                    }
                }
            }
        }
        return Report(chain: chain, tables: results)
    }

    /// The first key (hex) where two tables' compared entries differ.
    static func firstDifference(_ a: ViewEntries, _ b: ViewEntries) throws -> String {
        // Walk both in chunks to bound memory on large tables.
        let chunkSize = 4096
        var start: [UInt8]?
        func chunk(_ entries: ViewEntries) throws -> [([UInt8], [UInt8])] {
            var chunk: [([UInt8], [UInt8])] = []
            try entries.forEach(start) { key, value in
                chunk.append((Array(key), Array(value)))
                return chunk.count < chunkSize
            }
            return chunk
        }
        while true {
            let left = try chunk(a)
            let right = try chunk(b)
            for index in 0..<max(left.count, right.count) {
                let x = index < left.count ? left[index] : nil
                let y = index < right.count ? right[index] : nil
                if x?.0 != y?.0 || x?.1 != y?.1 {
                    let key = [x?.0, y?.0].compactMap { $0 }.min { $0.lexicographicallyPrecedes($1) } ?? []
                    return Hex.encode(key)
                }
            }
            guard left.count == chunkSize, let last = left.last?.0 else { return "unknown" }
            start = last + [0]
        }
    }
}
