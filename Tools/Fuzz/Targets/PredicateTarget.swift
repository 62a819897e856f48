import CumulusModel

/// Predicate text, as `records/query` takes it in a `filterBy` predicate string:
/// parsed, and an accepted query must survive the binary form a cursor carries.
enum PredicateTarget {
    static func run(_ input: [UInt8]) -> FuzzOutcome {
        let text = String(decoding: input, as: UTF8.self)
        let query: Query
        do {
            query = try PredicateParser.query(recordType: "TodoItem", predicate: text)
        } catch let error as CumulusError {
            return error.code == .invalidArguments
                ? .refused(error.message) : .broken("refused with \(error.code), not invalidArguments: \(error.message)")
        } catch {
            return .broken("threw \(type(of: error)): \(error)")
        }
        var writer = BinaryWriter()
        do {
            try QueryCodec.encode(query, into: &writer)
        } catch {
            // Values with no canonical form (NaN) cannot go into a cursor; the query
            // route refuses them the same way.
            return .refused("no binary form: \(error)")
        }
        let bytes = writer.bytes
        let decoded = bytes.withUnsafeBytes { buffer -> Query? in
            var reader = BinaryReader(buffer, context: "query")
            guard let query = try? QueryCodec.decode(from: &reader), reader.remaining == 0 else { return nil }
            return query
        }
        return decoded == query ? .accepted : .broken("the parsed query does not survive QueryCodec")
    }

    static func seeds() -> [[UInt8]] {
        [
            "priority >= 2 AND title BEGINSWITH 'a'",
            "self CONTAINS 'buy milk' AND NOT done == 1",
            "name == 'x' AND list != 'y'",
            "dueDate < 1790000000.5 AND tags CONTAINS 'x'",
            "name IN {'a', 'b', \"c\"} AND count BETWEEN {1, 10}",
            "TRUEPREDICATE",
            "NOT (a != 1) AND b == -3.25e2 AND c != 0",
            "recordID == 'x' AND ANY tags == 'y'",
        ].map { Array($0.utf8) }
    }
}
