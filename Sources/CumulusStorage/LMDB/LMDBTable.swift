import CLMDB

/// A handle to one named table (an LMDB "database") of one `LMDBEnvironment`.
///
/// Obtain it from `LMDBEnvironment.table(_:options:)`. It is a small value: copy it
/// freely, share it across threads and tasks. It stays valid for as long as the
/// environment that opened it is open; using it with a different environment throws
/// `StorageError.invalidArgument` instead of touching an unrelated table.
public struct LMDBTable: Sendable, Hashable, CustomStringConvertible {
    /// How a table stores its entries. Fixed when the table is created: opening an
    /// existing table with different options fails with `MDB_INCOMPATIBLE`.
    public struct Options: OptionSet, Sendable, Hashable {
        /// LMDB's `mdb_dbi_open` flag bits.
        public let rawValue: UInt32
        /// Options from LMDB flag bits; only the documented ones are meaningful.
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        /// Several sorted values per key (`MDB_DUPSORT`). Each value is then limited to
        /// the maximum key size (511 bytes), because LMDB stores duplicates as keys.
        public static let dupSort = Options(rawValue: UInt32(MDB_DUPSORT))
    }

    /// The table's name within its environment.
    public let name: String
    /// The options the table was opened with.
    public let options: Options
    /// How the table stores postings in blocks, or `nil` for a table of plain entries
    /// (``PostingBlock``). Deferred writes to such a table take logical keys, one per
    /// posting; everything else (`put`, `delete`, `get`, scans) sees its blocks.
    public let postings: PostingLayout?
    let dbi: MDB_dbi
    let environmentID: UInt64

    /// `LMDBTable(name)`, for messages.
    public var description: String { "LMDBTable(\(name))" }

    var isDupSort: Bool { options.contains(.dupSort) }
}
