import CumulusEngine
import CumulusModel
import CumulusTestSupport
import Foundation

extension QuerySuite {
    /// Every result of `query` in the sample zone, following cursors (`limit` per page).
    static func allResults(_ db: Database, _ query: Query, limit: Int = Database.maxResultsLimit) throws -> [Record] {
        var result = try db.query(query, in: SampleData.zone, resultsLimit: limit, as: EngineSuite.actor)
        var records = result.records
        while let cursor = result.cursor {
            result = try db.query(continuing: cursor, resultsLimit: limit, as: EngineSuite.actor)
            records += result.records
        }
        return records
    }

    /// Steps `statement` to the end, copying each row's blob (column 1) out as SQLite
    /// callers must, decoding it too if `decode`; returns the row count and resets.
    static func drain(_ statement: SQLiteStatement, decode: Bool = false) throws -> Int {
        var rows = 0
        while try statement.step() {
            let blob = statement.withBlob(1) { [UInt8]($0) }
            if decode { _ = try RecordCodec.decode(blob) }
            rows += 1
        }
        try statement.reset()
        return rows
    }

    /// Column 0 (the name) of every row, in order; resets.
    static func rowNames(_ statement: SQLiteStatement) throws -> [String] {
        var names: [String] = []
        while try statement.step() { names.append(statement.text(0) ?? "") }
        try statement.reset()
        return names
    }

    // MARK: - Children of one owner

    /// `list == <reference>`: the 100 items of one list, full records, for every list
    /// in a seeded random order; SQLite `SELECT … WHERE list = ?` on its index.
    static func children(_ data: QueryData, _ cumulus: CumulusStore, _ sqlite: SQLiteItems, _ sizes: Sizes, _ report: Report)
        throws
    {
        report.section("query: children of one owner (list == reference), full records")
        var rng = SeededRandom(seed: 43)
        let lists = data.lists.map(\.name).shuffled(using: &rng)
        let sql = "SELECT name, data FROM items WHERE list = ?1"
        report.note(
            "each of the \(Report.grouped(Int64(lists.count))) lists once per pass (random order), \(sizes.itemsPerList) items each; Cumulus: "
                + "Database.query(TodoItem, list == REFERENCE(list), in: zone, resultsLimit: 400), decoded records; "
                + "SQLite: \(sql), blob copied out (plan: \(try sqlite.plan(sql))); best of \(sizes.rounds) alternating passes")
        let select = try sqlite.db.prepare(sql)
        let queries = lists.map { list in
            Query(recordType: "TodoItem", filters: [
                QueryFilter(
                    key: .field("list"), comparator: .equals,
                    value: .reference(Reference(recordID: RecordID(recordName: list, zoneID: SampleData.zone)))),
            ])
        }

        // Untimed check: both sides return the same items for every list.
        var mismatch: String?
        for (list, query) in zip(lists, queries) {
            try select.bind(1, text: list)
            let expected = try rowNames(select).sorted()
            let got = names(try allResults(cumulus.db, query)).sorted()
            if let difference = difference(got, expected) {
                mismatch = "query TodoItem where list == REFERENCE(\(list)): \(difference)"
                break
            }
        }

        let expectedRows = lists.count * sizes.itemsPerList
        func sqlitePass(decode: Bool) throws -> Double {
            var rows = 0
            let elapsed = try measure {
                for list in lists {
                    try select.bind(1, text: list)
                    rows += try drain(select, decode: decode)
                }
            }
            guard rows == expectedRows else { throw BenchFailure("SQLite list queries: \(rows) rows, not \(expectedRows)") }
            return Double(lists.count) / elapsed
        }
        func cumulusPass() throws -> Double {
            var rows = 0
            var paged = 0
            let elapsed = try measure {
                for query in queries {
                    let result = try cumulus.db.query(
                        query, in: SampleData.zone, resultsLimit: Database.maxResultsLimit, as: EngineSuite.actor)
                    rows += result.records.count
                    if result.cursor != nil { paged += 1 }
                }
            }
            if mismatch == nil, rows != expectedRows || paged > 0 {
                mismatch = "list queries returned \(rows) records (expected \(expectedRows)), \(paged) with a cursor"
            }
            return Double(queries.count) / elapsed
        }

        var sqliteRate = 0.0
        var decodeRate = 0.0
        var cumulusRate = 0.0
        for _ in 0..<sizes.rounds {
            sqliteRate = max(sqliteRate, try sqlitePass(decode: false))
            cumulusRate = max(cumulusRate, try cumulusPass())
            decodeRate = max(decodeRate, try sqlitePass(decode: true))
        }
        report.compare(
            "queries/s, list == ref (100 of \(Report.grouped(Int64(sizes.items))))", Figure(checked(cumulusRate, mismatch, report), "queries/s"),
            baseline: "SQLite WHERE list=? (index)", Figure(sqliteRate, "queries/s"))
        report.compare(
            "  (same, beside decoding SQLite's blobs)", Figure(cumulusRate, "queries/s"),
            baseline: "SQLite + RecordCodec.decode", Figure(decodeRate, "queries/s"))
        report.info("  Cumulus records returned/s", Figure(cumulusRate * Double(sizes.itemsPerList), "records/s"))
    }

    // MARK: - Token search

    /// `self CONTAINS 'w1 w2'` for several pairs of moderately common tokens, picked
    /// from the data to give about `sizes.tokenResults` results each; SQLite FTS5
    /// `MATCH` joined to the items for the blobs (or the token table's INTERSECT).
    static func tokenSearch(_ data: QueryData, _ cumulus: CumulusStore, _ sqlite: SQLiteItems, _ sizes: Sizes, _ report: Report)
        throws
    {
        report.section("query: token search (self CONTAINS 'word1 word2'), full records")
        let pairs = tokenPairs(data, sizes)
        guard !pairs.isEmpty else { throw BenchFailure("no token pair has results") }
        let sql: String
        switch sqlite.tokenIndex {
        case .fts5:
            sql = "SELECT items.name, items.data FROM items_fts JOIN items ON items.id = items_fts.rowid WHERE items_fts MATCH ?1"
        case .tokenTable:
            sql = "SELECT name, data FROM items WHERE id IN "
                + "(SELECT item FROM tokens WHERE token = ?1 INTERSECT SELECT item FROM tokens WHERE token = ?2)"
        }
        let counts = pairs.map(\.expected.count)
        report.note(
            "\(pairs.count) token pairs, each searched once per pass: "
                + pairs.map { "\($0.first)+\($0.second) (\($0.expected.count))" }.joined(separator: ", "))
        report.note(
            "Cumulus: PredicateParser.query(TodoItem, \"self CONTAINS 'w1 w2'\") in the zone, resultsLimit 400, cursors "
                + "followed; SQLite (\(sqlite.tokenIndex.label)): \(sql) (plan: \(try sqlite.plan(sql))); expected results "
                + "from Cumulus's Tokenizer over the generated records; best of \(sizes.rounds) alternating rounds of ≥ "
                + "\(Report.format(sizes.minSeconds)) s")
        let select = try sqlite.db.prepare(sql)
        let queries = try pairs.map {
            try PredicateParser.query(recordType: "TodoItem", predicate: "self CONTAINS '\($0.first) \($0.second)'")
        }
        func bind(_ pair: TokenPair) throws {
            switch sqlite.tokenIndex {
            case .fts5:
                try select.bind(1, text: "\"\(pair.first)\" AND \"\(pair.second)\"")
            case .tokenTable:
                try select.bind(1, text: pair.first)
                try select.bind(2, text: pair.second)
            }
        }

        // Untimed check: Cumulus, SQLite and the generator agree on every pair.
        var mismatch: String?
        for (pair, query) in zip(pairs, queries) {
            try bind(pair)
            let fromSQLite = try rowNames(select).sorted()
            let got = names(try allResults(cumulus.db, query)).sorted()
            if let difference = difference(fromSQLite, pair.expected, "SQLite", "expected") {
                throw BenchFailure("SQLite's token search for \(pair.first) \(pair.second) disagrees with the data: \(difference)")
            }
            if let difference = difference(got, pair.expected) {
                mismatch = "self CONTAINS '\(pair.first) \(pair.second)': \(difference)"
                break
            }
        }

        let total = counts.reduce(0, +)
        func sqlitePass(decode: Bool) throws -> Double {
            var rows = 0
            let passes = try callRate(minSeconds: sizes.minSeconds) {
                for pair in pairs {
                    try bind(pair)
                    rows += try drain(select, decode: decode)
                }
            }
            guard rows % total == 0 else { throw BenchFailure("SQLite token search returned \(rows) rows in all passes") }
            return passes * Double(pairs.count)
        }
        func cumulusPass() throws -> Double {
            var returned = 0
            let passes = try callRate(minSeconds: sizes.minSeconds) {
                for query in queries { returned += try allResults(cumulus.db, query).count }
            }
            if mismatch == nil, returned % total != 0 {
                mismatch = "token searches returned \(returned) records over all passes, not a multiple of \(total)"
            }
            return passes * Double(pairs.count)
        }
        var sqliteRate = 0.0
        var decodeRate = 0.0
        var cumulusRate = 0.0
        for _ in 0..<sizes.rounds {
            sqliteRate = max(sqliteRate, try sqlitePass(decode: false))
            cumulusRate = max(cumulusRate, try cumulusPass())
            decodeRate = max(decodeRate, try sqlitePass(decode: true))
        }
        let mean = Double(total) / Double(pairs.count)
        report.compare(
            "queries/s, 2 tokens (~\(Int(mean.rounded())) results)", Figure(checked(cumulusRate, mismatch, report), "queries/s"),
            baseline: sqlite.tokenIndex == .fts5 ? "SQLite FTS5 MATCH + join" : "SQLite token table INTERSECT",
            Figure(sqliteRate, "queries/s"))
        report.compare(
            "  (same, beside decoding SQLite's blobs)", Figure(cumulusRate, "queries/s"),
            baseline: "SQLite + RecordCodec.decode", Figure(decodeRate, "queries/s"))
        report.detail("  results per search", "\(counts.min() ?? 0)–\(counts.max() ?? 0), mean \(Report.format(mean))")
    }

    struct TokenPair {
        let first: String
        let second: String
        /// The names of the items holding both tokens, sorted.
        let expected: [String]
    }

    /// Pairs of tokens (no stop words) each in 1–10 % of the items, whose number of
    /// items holding both is closest to `sizes.tokenResults`; a word is used at most
    /// twice. Computed with Cumulus's `Tokenizer`, the definition of a token.
    static func tokenPairs(_ data: QueryData, _ sizes: Sizes) -> [TokenPair] {
        var postings: [String: [Int32]] = [:]
        for (index, item) in data.items.enumerated() {
            for token in Tokenizer.tokens(of: item.record) { postings[token, default: []].append(Int32(index)) }
        }
        let count = data.items.count
        let candidates = postings
            .filter { $0.value.count >= count / 100 && $0.value.count <= count / 10 }
            .sorted { ($0.value.count, $0.key) > ($1.value.count, $1.key) }
            .prefix(100)
            .map { (token: $0.key, items: $0.value) }
        var scored: [(distance: Int, first: String, second: String, both: [Int32])] = []
        for a in candidates.indices {
            for b in candidates.indices where b > a {
                let both = intersect(candidates[a].items, candidates[b].items)
                guard !both.isEmpty else { continue }
                let words = [candidates[a].token, candidates[b].token].sorted()
                scored.append((abs(both.count - sizes.tokenResults), words[0], words[1], both))
            }
        }
        scored.sort { ($0.distance, $0.first, $0.second) < ($1.distance, $1.first, $1.second) }
        var uses: [String: Int] = [:]
        var pairs: [TokenPair] = []
        for entry in scored where pairs.count < sizes.tokenPairs {
            guard uses[entry.first, default: 0] < 2, uses[entry.second, default: 0] < 2 else { continue }
            uses[entry.first, default: 0] += 1
            uses[entry.second, default: 0] += 1
            pairs.append(TokenPair(
                first: entry.first, second: entry.second, expected: entry.both.map { data.items[Int($0)].name }.sorted()))
        }
        return pairs
    }

    /// The common elements of two ascending arrays.
    static func intersect(_ a: [Int32], _ b: [Int32]) -> [Int32] {
        var result: [Int32] = []
        var i = 0
        var j = 0
        while i < a.count && j < b.count {
            if a[i] < b[j] { i += 1 } else if b[j] < a[i] { j += 1 } else {
                result.append(a[i])
                i += 1
                j += 1
            }
        }
        return result
    }
}
