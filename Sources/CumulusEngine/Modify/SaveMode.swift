/// How a save treats the server's copy (`Docs/DATA-MODEL.md`, "Modify operations").
/// The first three are the Swift
/// API's save policies; the rest are the HTTP API's operation types.
public enum SaveMode: Sendable, Hashable {
    /// Saves only if the client's change tag equals the server's; writes the
    /// client's changed keys. A new record (no tag) whose ID exists conflicts.
    case ifServerRecordUnchanged
    /// No tag check; writes only the client's changed keys; creates if missing.
    case changedKeys
    /// No tag check; writes every field the client's copy holds; fields it does not
    /// hold keep the server's values; creates if missing.
    case allKeys
    /// HTTP `create`: fails if the record exists.
    case create
    /// HTTP `update`: tag checked; writes the fields sent.
    case update
    /// HTTP `replace`: tag checked; the fields sent become all the fields.
    case replace
    /// HTTP `forceUpdate`: like `update` without the tag check; creates if missing.
    case forceUpdate
    /// HTTP `forceReplace`: like `replace` without the tag check; creates if missing.
    case forceReplace

    /// Whether the client's change tag must equal the server's.
    var checksTag: Bool {
        switch self {
        case .ifServerRecordUnchanged, .update, .replace: true
        case .changedKeys, .allKeys, .create, .forceUpdate, .forceReplace: false
        }
    }

    /// Whether a missing record is created (otherwise `unknownItem`).
    var createsMissing: Bool {
        switch self {
        case .update, .replace: false
        default: true
        }
    }

    /// Whether fields the client does not send are removed.
    var replacesAllFields: Bool { self == .replace || self == .forceReplace }
}

/// The native save policies of `CKModifyRecordsOperation`.
public enum SavePolicy: Sendable, Hashable {
    /// Tag checked (the default).
    case ifServerRecordUnchanged
    /// No tag check; changed keys only.
    case changedKeys
    /// No tag check; all keys the client holds.
    case allKeys

    /// The save mode this policy means.
    public var mode: SaveMode {
        switch self {
        case .ifServerRecordUnchanged: .ifServerRecordUnchanged
        case .changedKeys: .changedKeys
        case .allKeys: .allKeys
        }
    }
}

/// How a delete treats the server's copy.
public enum DeleteMode: Sendable, Hashable {
    /// Deletes whatever the server holds (the Swift API; HTTP `forceDelete`).
    case force
    /// HTTP `delete`: only if the server's change tag equals this one.
    case ifTagMatches(String)
}
