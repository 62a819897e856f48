import CumulusModel

/// RFC 4180 rows: fields separated by commas, rows by CRLF-or-LF; a field holding a
/// comma, quote, CR or LF is quoted, and quotes inside it doubled.
public enum CSV {
    /// `fields` as one row, without a line break.
    public static func row(_ fields: [String]) -> String {
        fields.map(field).joined(separator: ",")
    }

    /// One field, quoted when it must be.
    public static func field(_ text: String) -> String {
        var mustQuote = false
        for byte in text.utf8 where byte == 0x2C || byte == 0x22 || byte == 0x0A || byte == 0x0D {
            mustQuote = true
            break
        }
        guard mustQuote else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// Parses one row. Returns `nil` when a quoted field is still open at the end
    /// (the row continues on the next line); throws on text after a closing quote.
    public static func parse(_ row: String) throws -> [String]? {
        var fields: [String] = []
        var current = ""
        var quoted = false
        var afterQuote = false
        var atFieldStart = true
        for character in row {
            if quoted {
                if character == "\"" {
                    quoted = false
                    afterQuote = true
                } else {
                    current.append(character)
                }
                continue
            }
            switch character {
            case "\"" where atFieldStart:
                quoted = true
                atFieldStart = false
            case "\"" where afterQuote:
                // A doubled quote inside a quoted field.
                current.append("\"")
                quoted = true
                afterQuote = false
            case ",":
                fields.append(current)
                current = ""
                afterQuote = false
                atFieldStart = true
            case "\r":
                continue
            default:
                if afterQuote { throw CumulusError(.invalidArguments, "text after a closing quote") }
                if character == "\"" { throw CumulusError(.invalidArguments, "a quote inside an unquoted field") }
                current.append(character)
                atFieldStart = false
            }
        }
        if quoted { return nil }
        fields.append(current)
        return fields
    }
}
