import CumulusModel
import Foundation

/// One event line of an audit export as read back: its line number and the
/// canonical text of each column (``EntryFormatter/fields(_:)``), so a line from
/// either format compares with an entry regenerated from the log.
public struct AuditLine: Sendable, Hashable {
    /// The line's number in the file (from 1).
    public var number: Int
    /// Column texts, in ``EntryFormatter/columns`` order.
    public var fields: [String]
    /// (sequence, event index): what identifies the line.
    public var identity: AuditIdentity

    /// Parses a JSON Lines line.
    public init(json line: String, number: Int) throws {
        guard case .object(let members)? = try? JSONValue.parse(Data(line.utf8)) else {
            throw Self.malformed(number, "is not a JSON object")
        }
        var fields: [String] = []
        for column in EntryFormatter.columns {
            switch members[column] {
            case .string(let text)?: fields.append(text)
            case .int(let value)?: fields.append(String(value))
            case .null?: fields.append("")
            case .array(let items)?:
                fields.append(items.map { $0.stringValue ?? "?" }.joined(separator: ";"))
            case nil: throw Self.malformed(number, "has no \"\(column)\"")
            default: throw Self.malformed(number, "has a \"\(column)\" of an unexpected kind")
            }
        }
        try self.init(fields: fields, number: number)
    }

    /// A line from CSV fields.
    public init(fields: [String], number: Int) throws {
        guard fields.count == EntryFormatter.columns.count else {
            throw Self.malformed(number, "has \(fields.count) columns, not \(EntryFormatter.columns.count)")
        }
        guard let sequence = UInt64(fields[0]), let event = Int(fields[1]) else {
            throw Self.malformed(number, "has no valid sequence and event number")
        }
        self.number = number
        self.fields = fields
        identity = AuditIdentity(sequence: sequence, event: event)
    }

    /// The text of `column`.
    public subscript(column: String) -> String {
        EntryFormatter.columns.firstIndex(of: column).map { fields[$0] } ?? ""
    }

    static func malformed(_ number: Int, _ reason: String) -> CumulusError {
        CumulusError(.invalidArguments, "malformed audit export: line \(number) \(reason)")
    }
}
