import CumulusLog
import CumulusModel

/// One event of one commit, flattened for people and machines: what `cumulus log`
/// prints and what an audit export holds, one per line.
///
/// It never holds field values, only key names, so encrypted values cannot leak
/// through it.
public struct LogEntry: Sendable, Hashable {
    /// The commit's global sequence.
    public var sequence: UInt64
    /// The event's position within its commit (0-based).
    public var eventIndex: Int
    /// The commit time.
    public var time: Timestamp
    /// The acting user's record name (empty for the system).
    public var user: String
    /// The commit's request ID.
    public var requestID: String
    /// The event's kind: `recordSaved`, `recordDeleted`, `changeTagBumped`,
    /// `zoneSaved`, `zoneDeleted`, `subscriptionSaved`, `subscriptionDeleted`,
    /// `dictionaryInstalled`, `schemaChanged`, `schemaExtended`, `rolesAssigned`,
    /// `epochBegan`.
    public var operation: String
    /// The database, if the event belongs to one.
    public var database: DatabaseID?
    /// The zone, if the event belongs to one.
    public var zone: ZoneID?
    /// The record's name (a subscription's ID for subscription events, the
    /// dictionary number for `dictionaryInstalled`, the user for `rolesAssigned`, the
    /// epoch for `epochBegan`).
    public var recordName: String?
    /// The record's type, where the event carries it.
    public var recordType: String?
    /// The keys a save changed (names only); the fields a schema gained, the roles
    /// a user was given.
    public var changedKeys: [String]
    /// Why: `direct`, `cascade:OWNER`, `zoneDeleted` for deletes; `reference:SOURCE`
    /// for a change-tag bump caused by a reference from SOURCE; for schema events
    /// `import|deploy|reset|justInTime|roles:CONTAINER/ENVIRONMENT`.
    public var cause: String?
    /// The record's change tag after the event (saves and tag bumps).
    public var changeTag: String?
    /// The commit's chain hash.
    public var commitHash: [UInt8]
    /// The previous commit's chain hash (32 zero bytes before the first).
    public var previousHash: [UInt8]

    /// An entry.
    public init(
        sequence: UInt64, eventIndex: Int, time: Timestamp, user: String, requestID: String, operation: String,
        database: DatabaseID?, zone: ZoneID?, recordName: String?, recordType: String?, changedKeys: [String],
        cause: String?, changeTag: String?, commitHash: [UInt8], previousHash: [UInt8]
    ) {
        self.sequence = sequence
        self.eventIndex = eventIndex
        self.time = time
        self.user = user
        self.requestID = requestID
        self.operation = operation
        self.database = database
        self.zone = zone
        self.recordName = recordName
        self.recordType = recordType
        self.changedKeys = changedKeys
        self.cause = cause
        self.changeTag = changeTag
        self.commitHash = commitHash
        self.previousHash = previousHash
    }

    /// The entries of every event of `commit`, in order.
    public static func entries(of commit: Commit, hash: [UInt8], previousHash: [UInt8]) -> [LogEntry] {
        commit.events.enumerated().map { index, event in
            var entry = LogEntry(
                sequence: commit.sequence, eventIndex: index, time: commit.timestamp, user: commit.actor,
                requestID: commit.requestID, operation: operation(of: event), database: event.database,
                zone: event.zoneID, recordName: event.recordID?.recordName, recordType: nil, changedKeys: [],
                cause: nil, changeTag: nil, commitHash: hash, previousHash: previousHash)
            switch event {
            case .recordSaved(_, let record, let changedKeys):
                entry.recordType = record.recordType
                entry.changedKeys = changedKeys
                entry.changeTag = record.recordChangeTag
            case .recordDeleted(_, _, let recordType, let cause):
                entry.recordType = recordType
                entry.cause = describe(cause)
            case .changeTagBumped(_, _, let changeTag, let source):
                entry.changeTag = changeTag
                entry.cause = "reference:" + source.recordName
            case .subscriptionSaved(_, let subscriptionID, _), .subscriptionDeleted(_, let subscriptionID):
                entry.recordName = subscriptionID
            case .dictionaryInstalled(let id, _):
                entry.recordName = String(id)
            case .schemaChanged(let schema, _, let reason):
                entry.cause = reason.name + ":" + schema.description
            case .schemaExtended(let schema, let recordType, let fields):
                entry.recordType = recordType
                entry.changedKeys = fields.map(\.name)
                entry.cause = "justInTime:" + schema.description
            case .rolesAssigned(let schema, let user, let roles):
                entry.recordName = user
                entry.changedKeys = roles
                entry.cause = "roles:" + schema.description
            case .epochBegan(let epoch):
                entry.recordName = String(epoch)
            case .shareSaved(_, let share):
                // Who may see what is the point of an audit: every participant, with
                // permission and status, and what the share opens.
                entry.zone = share.zoneID
                entry.recordName = share.recordName
                entry.recordType = Share.recordType
                entry.changedKeys = share.participants.map {
                    "\($0.userRecordName):\($0.role.wireName):\($0.permission.wireName):\($0.acceptance.wireName)"
                }
                entry.cause = (share.rootRecordName.map { "root:" + $0 } ?? "zone") + " public:" + share.publicPermission.wireName
            case .shareDeleted(_, let zoneID, let recordName):
                entry.zone = zoneID
                entry.recordName = recordName
                entry.recordType = Share.recordType
            case .zoneSaved, .zoneDeleted:
                break
            }
            return entry
        }
    }

    /// The operation name of `event`.
    public static func operation(of event: Event) -> String {
        switch event {
        case .recordSaved: "recordSaved"
        case .recordDeleted: "recordDeleted"
        case .changeTagBumped: "changeTagBumped"
        case .zoneSaved: "zoneSaved"
        case .zoneDeleted: "zoneDeleted"
        case .subscriptionSaved: "subscriptionSaved"
        case .subscriptionDeleted: "subscriptionDeleted"
        case .dictionaryInstalled: "dictionaryInstalled"
        case .schemaChanged: "schemaChanged"
        case .schemaExtended: "schemaExtended"
        case .rolesAssigned: "rolesAssigned"
        case .epochBegan: "epochBegan"
        case .shareSaved: "shareSaved"
        case .shareDeleted: "shareDeleted"
        }
    }

    /// `direct`, `cascade:OWNER` or `zoneDeleted`.
    public static func describe(_ cause: DeleteCause) -> String {
        switch cause {
        case .direct: "direct"
        case .cascade(let owner): "cascade:" + owner.recordName
        case .zoneDeleted: "zoneDeleted"
        }
    }
}
