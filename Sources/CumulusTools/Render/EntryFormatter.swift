import CumulusModel

/// How a ``LogEntry`` is written: a line for people (`cumulus log`), and the audit
/// export's JSON Lines and CSV rows, which share one column list.
public enum EntryFormatter {
    /// The audit columns, in order. `event` is the event's index in its commit: with
    /// `sequence` it identifies the line.
    public static let columns = [
        "sequence", "event", "time", "user", "requestID", "operation", "database", "zone", "recordID", "recordType",
        "changedKeys", "cause", "changeTag", "commitHash", "previousHash",
    ]

    /// The canonical text of each column (``columns`` order): what `audit verify`
    /// compares. Absent values are empty; changed keys are joined by `;` (key names
    /// are identifiers, so never contain one).
    public static func fields(_ entry: LogEntry) -> [String] {
        [
            String(entry.sequence), String(entry.eventIndex), ToolTime.iso(entry.time), entry.user, entry.requestID,
            entry.operation, entry.database?.description ?? "", entry.zone?.description ?? "",
            entry.recordName ?? "", entry.recordType ?? "", entry.changedKeys.joined(separator: ";"),
            entry.cause ?? "", entry.changeTag ?? "", Hex.encode(entry.commitHash), Hex.encode(entry.previousHash),
        ]
    }

    /// One JSON object on one line (no trailing newline); keys in ``columns`` order.
    public static func json(_ entry: LogEntry) -> String {
        var renderer = LineRenderer()
        var bytes: [UInt8] = []
        renderer.json(entry, into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// One CSV row (RFC 4180; no trailing line break).
    public static func csv(_ entry: LogEntry) -> String {
        var renderer = LineRenderer()
        var bytes: [UInt8] = []
        renderer.csv(entry, into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// One line for people: sequence, time, user, operation, zone, record (type),
    /// changed keys, cause.
    public static func text(_ entry: LogEntry) -> String {
        var line = "#\(entry.sequence)"
        if entry.eventIndex > 0 { line += ".\(entry.eventIndex)" }
        line += "  " + ToolTime.iso(entry.time) + "  " + (entry.user.isEmpty ? "(system)" : entry.user)
        line += "  " + entry.operation
        if let zone = entry.zone { line += "  " + zone.description }
        if let name = entry.recordName {
            line += "  " + name
            if let type = entry.recordType { line += " (" + type + ")" }
        }
        if !entry.changedKeys.isEmpty { line += "  keys: " + entry.changedKeys.joined(separator: ",") }
        if let cause = entry.cause { line += "  cause: " + cause }
        if let tag = entry.changeTag { line += "  tag: " + tag }
        return line
    }

    /// `text` as a JSON string literal.
    public static func quoted(_ text: String) -> String {
        var out: [UInt8] = []
        LineRenderer.jsonString(text.utf8, &out)
        return String(decoding: out, as: UTF8.self)
    }
}
