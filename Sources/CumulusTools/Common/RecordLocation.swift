import CumulusModel

/// A record's full location: its database and ID.
public struct RecordLocation: Sendable, Hashable, CustomStringConvertible {
    /// The database.
    public var database: DatabaseID
    /// The record ID (name and zone).
    public var recordID: RecordID

    /// A location.
    public init(database: DatabaseID, recordID: RecordID) {
        self.database = database
        self.recordID = recordID
    }

    /// `name@zone:owner in database`.
    public var description: String { "\(recordID) in \(database)" }
}
