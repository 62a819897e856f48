/// How many bytes of records one user, and one container, may hold (issue 40;
/// `Docs/SECURITY.md` lists them): the record bytes and asset files ``RecordUsage``
/// counts, both environments together. A save whose payer, or whose container,
/// holds its quota already is `quotaExceeded`; deletions always pass, so the way
/// back under is open. The save that crosses a quota is let through, so a payer can go
/// over by at most one operation (whose size the request limits bound).
public struct RecordQuota: Sendable, Hashable {
    /// Bytes the records one user pays for may hold in one container (iCloud's free
    /// storage, 5 GB, is what a CloudKit user starts with).
    public var bytesPerUser: Int64 = 5_000_000_000
    /// Bytes all records of one container may hold.
    public var bytesPerContainer: Int64 = 200_000_000_000

    /// The defaults.
    public init() {}

    /// Quotas of `bytesPerUser` and `bytesPerContainer`.
    public init(bytesPerUser: Int64, bytesPerContainer: Int64) {
        self.bytesPerUser = bytesPerUser
        self.bytesPerContainer = bytesPerContainer
    }
}
