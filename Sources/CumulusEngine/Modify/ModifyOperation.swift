import CumulusModel

/// One record to save and how.
public struct RecordSave: Sendable, Hashable {
    /// The client's copy of the record.
    public var record: Record
    /// How it treats the server's copy.
    public var mode: SaveMode
    /// For a `cloudkit.share` record: the access the share grants (`nil`: as stored).
    public var share: ShareDefinition?

    /// A save.
    public init(_ record: Record, mode: SaveMode = .ifServerRecordUnchanged, share: ShareDefinition? = nil) {
        self.record = record
        self.mode = mode
        self.share = share
    }
}

/// One record to delete and how.
public struct RecordDelete: Sendable, Hashable {
    /// The record to delete.
    public var recordID: RecordID
    /// Whether the server's change tag is checked first.
    public var mode: DeleteMode

    /// A delete.
    public init(_ recordID: RecordID, mode: DeleteMode = .force) {
        self.recordID = recordID
        self.mode = mode
    }
}

/// A modify operation: saves and deletes applied as one commit (`Docs/DATA-MODEL.md`, "Modify operations").
public struct ModifyOperation: Sendable, Hashable {
    /// Records to save.
    public var saves: [RecordSave]
    /// Records to delete.
    public var deletes: [RecordDelete]
    /// All-or-nothing per zone, in zones with the `atomic` capability (custom
    /// zones); the default zone is never atomic.
    public var atomic: Bool
    /// Echoed by zone change fetches so the client can tell its write arrived.
    public var clientChangeTokenData: [UInt8]?
    /// For tracing and audit; generated when absent.
    public var requestID: String?
    /// Most items allowed (400 for the Swift API, 200 through HTTP).
    public var itemLimit: Int
    /// CPU time planning may spend in the writer (``Database/defaultRequestCPULimit``).
    public var cpuLimit: Duration
    /// The bytes records may hold (`nil`: unbounded, for tools and the Swift API; the
    /// server always sets it).
    public var recordQuota: RecordQuota?

    /// An operation.
    public init(
        saves: [RecordSave] = [], deletes: [RecordDelete] = [], atomic: Bool = true,
        clientChangeTokenData: [UInt8]? = nil, requestID: String? = nil, itemLimit: Int = Limits.maxItemsPerOperation,
        cpuLimit: Duration = Database.defaultRequestCPULimit, recordQuota: RecordQuota? = nil
    ) {
        self.saves = saves
        self.deletes = deletes
        self.atomic = atomic
        self.clientChangeTokenData = clientChangeTokenData
        self.requestID = requestID
        self.itemLimit = itemLimit
        self.cpuLimit = cpuLimit
        self.recordQuota = recordQuota
    }
}
