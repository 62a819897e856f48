import Foundation

/// One figure as `cumulus-bench --json` prints it: a JSON object on one line, its
/// keys in this order, every key present (`null` where a figure has no baseline or
/// target, or a number is not finite). `cumulus-bench tables` reads them back
/// (``MarkdownTables``).
struct FigureRecord: Decodable {
    var suite: String
    /// The section of the suite the figure was printed under (its `==` title).
    var section: String
    var figure: String
    var value: Double
    var unit: String
    var baseline: String?
    var baselineValue: Double?
    var baselineUnit: String?
    var ratio: Double?
    /// The target as the table prints it, e.g. "≥ 1".
    var target: String?
    var met: Bool?

    /// The object's text. Written by hand rather than through `JSONEncoder`, whose
    /// key order is not the declared one on every platform.
    var json: String {
        let fields: [(String, String)] = [
            ("suite", Self.string(suite)),
            ("section", Self.string(section)),
            ("figure", Self.string(String(figure.drop { $0 == " " }))),
            ("value", Self.number(value)),
            ("unit", Self.string(unit)),
            ("baseline", baseline.map(Self.string) ?? "null"),
            ("baselineValue", Self.number(baselineValue)),
            ("baselineUnit", baselineUnit.map(Self.string) ?? "null"),
            ("ratio", Self.number(ratio)),
            ("target", target.map(Self.string) ?? "null"),
            ("met", met.map { $0 ? "true" : "false" } ?? "null"),
        ]
        return "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }

    private static func number(_ value: Double?) -> String {
        guard let value, value.isFinite else { return "null" }
        return "\(value)"
    }

    private static func string(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            case let control where control.value < 0x20: out += String(format: "\\u%04x", control.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
