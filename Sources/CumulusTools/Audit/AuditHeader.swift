import CumulusModel
import Foundation

/// The first line of an audit export: which log it came from and exactly what it
/// covers (sequence range and filters), so `audit verify` can regenerate the
/// expected lines and tell a removed line from one the filters left out.
///
/// JSON Lines: `{"cumulusAudit":1,"logID":"…","from":1,"through":N,"database":null,…}`.
/// CSV: `#cumulusAudit=1&logID=…&from=1&through=N&zone=…` (URL query encoding), a
/// line CSV readers skip as a comment (e.g. pandas' `comment="#"`).
public struct AuditHeader: Sendable, Hashable {
    /// The format version.
    public static let version = 1
    /// The source log's ID, hex.
    public var logID: String
    /// The range and filters the export applied (`through` is resolved, never open).
    public var filter: LogFilter

    /// A header.
    public init(logID: String, filter: LogFilter) {
        self.logID = logID
        self.filter = filter
    }

    private var optionals: [(String, String?)] {
        [
            ("database", filter.scope.database), ("zone", filter.scope.zone), ("user", filter.user),
            ("recordType", filter.recordType), ("recordID", filter.recordName),
        ]
    }

    /// The header line in `format`.
    public func line(_ format: AuditFormat) -> String {
        switch format {
        case .jsonl:
            var line = "{\"cumulusAudit\":\(Self.version),\"logID\":\"\(logID)\",\"from\":\(filter.from),\"through\":\(filter.through)"
            for (key, value) in optionals {
                line += ",\"\(key)\":" + (value.map(EntryFormatter.quoted) ?? "null")
            }
            return line + "}"
        case .csv:
            var components = URLComponents()
            components.queryItems =
                [
                    URLQueryItem(name: "cumulusAudit", value: String(Self.version)), URLQueryItem(name: "logID", value: logID),
                    URLQueryItem(name: "from", value: String(filter.from)),
                    URLQueryItem(name: "through", value: String(filter.through)),
                ] + optionals.compactMap { key, value in value.map { URLQueryItem(name: key, value: $0) } }
            return "#" + (components.percentEncodedQuery ?? "")
        }
    }

    /// Parses a header line; `invalidArguments` if it is not one.
    public init(parsing line: String) throws {
        var values: [String: String] = [:]
        if line.hasPrefix("{") {
            guard case .object(let members)? = try? JSONValue.parse(Data(line.utf8)) else {
                throw Self.malformed("line 1 is not a JSON object")
            }
            for (key, value) in members {
                switch value {
                case .string(let text): values[key] = text
                case .int(let number): values[key] = String(number)
                default: continue
                }
            }
        } else if line.hasPrefix("#") {
            guard let items = URLComponents(string: "?" + line.dropFirst())?.queryItems else {
                throw Self.malformed("line 1 is not a '#key=value&…' header")
            }
            for item in items { values[item.name] = item.value ?? "" }
        } else {
            throw Self.malformed("line 1 is neither a JSON Lines nor a CSV audit header")
        }
        guard values["cumulusAudit"] == String(Self.version) else {
            throw Self.malformed("line 1 does not name audit format version \(Self.version)")
        }
        guard let logID = values["logID"], let from = values["from"].flatMap(UInt64.init),
            let through = values["through"].flatMap(UInt64.init)
        else { throw Self.malformed("line 1 lacks logID, from or through") }
        self.logID = logID
        filter = LogFilter(
            from: from, through: through, scope: ScopeMatcher(database: values["database"], zone: values["zone"]),
            recordName: values["recordID"], user: values["user"], recordType: values["recordType"])
    }

    /// The format a header line belongs to.
    public static func format(of line: String) -> AuditFormat? {
        line.hasPrefix("{") ? .jsonl : line.hasPrefix("#") ? .csv : nil
    }

    static func malformed(_ reason: String) -> CumulusError {
        CumulusError(.invalidArguments, "not a Cumulus audit export: \(reason)")
    }
}
