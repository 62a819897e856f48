import CumulusModel

/// Which events `cumulus log` and `audit export` show: a sequence range (times are
/// resolved to sequences first, ``PointInTime``) and exact matches on the rest.
/// `nil` means "any".
public struct LogFilter: Sendable, Hashable {
    /// First sequence shown.
    public var from: UInt64
    /// Last sequence shown.
    public var through: UInt64
    /// Database and zone.
    public var scope: ScopeMatcher
    /// Record name.
    public var recordName: String?
    /// Acting user.
    public var user: String?
    /// Record type (events without a type — tag bumps, zone events — do not match).
    public var recordType: String?

    /// A filter; the defaults show everything.
    public init(
        from: UInt64 = 1, through: UInt64 = .max, scope: ScopeMatcher = ScopeMatcher(), recordName: String? = nil,
        user: String? = nil, recordType: String? = nil
    ) {
        self.from = from
        self.through = through
        self.scope = scope
        self.recordName = recordName
        self.user = user
        self.recordType = recordType
    }

    /// Whether nothing but the range narrows the events (every event of every commit
    /// in range is shown).
    public var isUnfiltered: Bool {
        scope.database == nil && scope.zone == nil && recordName == nil && user == nil && recordType == nil
    }

    /// Whether `entry` passes every part of the filter except the range.
    public func matches(_ entry: LogEntry) -> Bool {
        if let user, entry.user != user { return false }
        if let recordName, entry.recordName != recordName { return false }
        if let recordType, entry.recordType != recordType { return false }
        if scope.database != nil {
            guard let database = entry.database, scope.matches(database) else { return false }
        }
        if scope.zone != nil {
            guard let zone = entry.zone, scope.matches(zone) else { return false }
        }
        return true
    }
}
