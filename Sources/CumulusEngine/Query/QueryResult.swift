import CumulusModel

/// One page of query results.
public struct QueryResult: Sendable {
    /// The matching records, in the query's order.
    public var records: [Record]
    /// Present when more results exist: pass it back to get the next page.
    public var cursor: QueryCursor?

    /// A page.
    public init(records: [Record], cursor: QueryCursor?) {
        self.records = records
        self.cursor = cursor
    }
}
