/// The file formats of an audit export.
public enum AuditFormat: String, Sendable, Hashable, CaseIterable {
    /// JSON Lines: a header object, then one object per event.
    case jsonl
    /// RFC 4180 CSV: a `#` header line, the column names, then one row per event.
    case csv
}
