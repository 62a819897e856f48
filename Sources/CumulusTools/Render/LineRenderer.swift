import CumulusModel

/// Writes ``LogEntry`` lines as bytes, straight into an output buffer: audit exports
/// write one line per event, and building each through `String` pieces (a dozen
/// small allocations per timestamp alone) cost more than reading the log. The
/// rendered text of the last database and zone seen is kept, since consecutive
/// events nearly always share them.
public struct LineRenderer {
    private var database: (id: DatabaseID, text: [UInt8])?
    private var zone: (id: ZoneID, text: [UInt8])?
    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// A renderer with empty caches.
    public init() {}

    /// Appends `entry` as one JSON object (keys in ``EntryFormatter/columns`` order).
    public mutating func json(_ entry: LogEntry, into out: inout [UInt8]) {
        Self.raw("{\"sequence\":", &out)
        Self.decimal(entry.sequence, &out)
        Self.raw(",\"event\":", &out)
        Self.decimal(UInt64(entry.eventIndex), &out)
        Self.raw(",\"time\":\"", &out)
        Self.iso(entry.time, &out)
        Self.raw("\",\"user\":", &out)
        Self.jsonString(entry.user.utf8, &out)
        Self.raw(",\"requestID\":", &out)
        Self.jsonString(entry.requestID.utf8, &out)
        Self.raw(",\"operation\":", &out)
        Self.jsonString(entry.operation.utf8, &out)
        Self.raw(",\"database\":", &out)
        if let id = entry.database { Self.jsonString(databaseText(id), &out) } else { Self.raw("null", &out) }
        Self.raw(",\"zone\":", &out)
        if let id = entry.zone { Self.jsonString(zoneText(id), &out) } else { Self.raw("null", &out) }
        Self.raw(",\"recordID\":", &out)
        Self.jsonOptional(entry.recordName, &out)
        Self.raw(",\"recordType\":", &out)
        Self.jsonOptional(entry.recordType, &out)
        Self.raw(",\"changedKeys\":[", &out)
        for (index, key) in entry.changedKeys.enumerated() {
            if index > 0 { out.append(0x2C) }
            Self.jsonString(key.utf8, &out)
        }
        Self.raw("],\"cause\":", &out)
        Self.jsonOptional(entry.cause, &out)
        Self.raw(",\"changeTag\":", &out)
        Self.jsonOptional(entry.changeTag, &out)
        Self.raw(",\"commitHash\":\"", &out)
        Self.hex(entry.commitHash, &out)
        Self.raw("\",\"previousHash\":\"", &out)
        Self.hex(entry.previousHash, &out)
        Self.raw("\"}", &out)
    }

    /// Appends `entry` as one RFC 4180 row (``EntryFormatter/columns`` order).
    public mutating func csv(_ entry: LogEntry, into out: inout [UInt8]) {
        Self.decimal(entry.sequence, &out)
        out.append(0x2C)
        Self.decimal(UInt64(entry.eventIndex), &out)
        out.append(0x2C)
        Self.iso(entry.time, &out)
        for text in [entry.user, entry.requestID, entry.operation] {
            out.append(0x2C)
            Self.csvField(text.utf8, &out)
        }
        out.append(0x2C)
        if let id = entry.database { Self.csvField(databaseText(id), &out) }
        out.append(0x2C)
        if let id = entry.zone { Self.csvField(zoneText(id), &out) }
        for text in [entry.recordName, entry.recordType] {
            out.append(0x2C)
            if let text { Self.csvField(text.utf8, &out) }
        }
        out.append(0x2C)
        Self.csvField(entry.changedKeys.joined(separator: ";").utf8, &out)
        for text in [entry.cause, entry.changeTag] {
            out.append(0x2C)
            if let text { Self.csvField(text.utf8, &out) }
        }
        out.append(0x2C)
        Self.hex(entry.commitHash, &out)
        out.append(0x2C)
        Self.hex(entry.previousHash, &out)
    }

    private mutating func databaseText(_ id: DatabaseID) -> [UInt8] {
        if let database, database.id == id { return database.text }
        let text = Array(id.description.utf8)
        database = (id, text)
        return text
    }

    private mutating func zoneText(_ id: ZoneID) -> [UInt8] {
        if let zone, zone.id == id { return zone.text }
        let text = Array(id.description.utf8)
        zone = (id, text)
        return text
    }

    // MARK: - Bytes

    private static func raw(_ text: StaticString, _ out: inout [UInt8]) {
        text.withUTF8Buffer { out.append(contentsOf: $0) }
    }

    static func decimal(_ value: UInt64, _ out: inout [UInt8]) {
        guard value >= 10 else {
            out.append(0x30 + UInt8(value))
            return
        }
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
            UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        var rest = value
        withUnsafeMutableBytes(of: &digits) { buffer in
            while rest > 0 {
                buffer[19 - count] = 0x30 + UInt8(rest % 10)
                rest /= 10
                count += 1
            }
            out.append(contentsOf: buffer[(20 - count)...])
        }
    }

    static func padded(_ value: Int, _ width: Int, _ out: inout [UInt8]) {
        var divisor = 1
        for _ in 1..<width { divisor *= 10 }
        var rest = value
        if rest < 0 {
            out.append(0x2D)
            rest = -rest
        }
        if rest >= divisor * 10 {
            decimal(UInt64(max(rest, 0)), &out)
            return
        }
        while divisor > 0 {
            out.append(0x30 + UInt8(rest / divisor))
            rest %= divisor
            divisor /= 10
        }
    }

    /// ISO-8601 UTC with milliseconds (``ToolTime/iso(_:)``).
    static func iso(_ time: Timestamp, _ out: inout [UInt8]) {
        let parts = ToolTime.components(time)
        // Each field with its width and the character after it: 2026-11-22T03:23:14.123Z
        let fields: [(Int, Int, UInt8)] = [
            (parts.year, 4, 0x2D), (parts.month, 2, 0x2D), (parts.day, 2, 0x54), (parts.hour, 2, 0x3A),
            (parts.minute, 2, 0x3A), (parts.second, 2, 0x2E), (parts.millisecond, 3, 0x5A),
        ]
        for (value, width, separator) in fields {
            padded(value, width, &out)
            out.append(separator)
        }
    }

    static func hex(_ bytes: [UInt8], _ out: inout [UInt8]) {
        for byte in bytes {
            out.append(hexDigits[Int(byte >> 4)])
            out.append(hexDigits[Int(byte & 0x0F)])
        }
    }

    private static func jsonOptional(_ text: String?, _ out: inout [UInt8]) {
        if let text { jsonString(text.utf8, &out) } else { raw("null", &out) }
    }

    /// A JSON string literal: quotes, backslashes and control characters escaped.
    static func jsonString(_ text: some Collection<UInt8>, _ out: inout [UInt8]) {
        out.append(0x22)
        for byte in text {
            switch byte {
            case 0x22: out.append(0x5C); out.append(0x22)
            case 0x5C: out.append(0x5C); out.append(0x5C)
            case 0x0A: out.append(0x5C); out.append(0x6E)
            case 0x0D: out.append(0x5C); out.append(0x72)
            case 0x09: out.append(0x5C); out.append(0x74)
            case 0..<0x20:
                raw("\\u00", &out)
                out.append(hexDigits[Int(byte >> 4)])
                out.append(hexDigits[Int(byte & 0x0F)])
            default: out.append(byte)
            }
        }
        out.append(0x22)
    }

    /// An RFC 4180 field, quoted only when it holds a comma, quote, CR or LF.
    static func csvField(_ text: some Collection<UInt8>, _ out: inout [UInt8]) {
        guard text.contains(where: { $0 == 0x2C || $0 == 0x22 || $0 == 0x0A || $0 == 0x0D }) else {
            out.append(contentsOf: text)
            return
        }
        out.append(0x22)
        for byte in text {
            if byte == 0x22 { out.append(0x22) }
            out.append(byte)
        }
        out.append(0x22)
    }
}
