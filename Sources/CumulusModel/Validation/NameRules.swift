/// The naming rules for identifiers (`Docs/DATA-MODEL.md`, "Records"), each a function a
/// caller can run before anything touches storage. Each failure is
/// `invalidArguments` with a message saying which rule was broken.
public enum NameRules {
    /// Record types the system defines, which may break the identifier rule.
    public static let systemRecordTypes: Set<String> = ["Users", "cloudkit.share"]

    /// Record names the system defines; the zone-wide share's name.
    public static let systemRecordNames: Set<String> = ["cloudkit.zoneshare"]

    /// Keys that name system fields or query pseudo-keys, refused as user field
    /// names so a predicate or a record dictionary can never be ambiguous.
    public static let reservedFieldNames: Set<String> = [
        "recordID", "recordName", "recordType", "recordChangeTag", "creationDate",
        "creatorUserRecordID", "modificationDate", "lastModifiedUserRecordID",
        "parent", "share", "allTokens", "self",
    ]

    /// A record name: 1–255 printable ASCII characters, not starting with `_`.
    /// `allowSystem` admits the server's own names (user record names such as
    /// `_9a06…`), which only the server creates.
    public static func checkRecordName(_ name: String, allowSystem: Bool = false) throws {
        try checkASCII(name, what: "record name")
        if name.utf8.first == UInt8(ascii: "_") && !allowSystem {
            throw CumulusError(.invalidArguments, "record name '\(name)' must not start with '_' (reserved for the system)")
        }
    }

    /// A zone name: 1–255 printable ASCII characters, not starting with `_`
    /// (`_defaultZone` excepted).
    public static func checkZoneName(_ name: String) throws {
        try checkASCII(name, what: "zone name")
        if name.utf8.first == UInt8(ascii: "_") && name != ZoneID.defaultZoneName {
            throw CumulusError(.invalidArguments, "zone name '\(name)' must not start with '_' (reserved for the system)")
        }
    }

    /// A zone ID: a valid zone name and a 1–255 printable ASCII owner name.
    public static func checkZoneID(_ zone: ZoneID) throws {
        try checkZoneName(zone.zoneName)
        try checkASCII(zone.ownerName, what: "zone owner name")
    }

    /// A record ID: its name and zone.
    public static func checkRecordID(_ id: RecordID, allowSystem: Bool = false) throws {
        do {
            try checkRecordName(id.recordName, allowSystem: allowSystem)
            try checkZoneID(id.zoneID)
        } catch let error as CumulusError {
            throw error.at(id)
        }
    }

    /// A record type: an identifier (`[A-Za-z][A-Za-z0-9_]*`, ≤255), or a system type.
    public static func checkRecordType(_ type: String) throws {
        if systemRecordTypes.contains(type) { return }
        try checkIdentifier(type, what: "record type")
    }

    /// A field name: an identifier (`[A-Za-z][A-Za-z0-9_]*`, ≤255), not a reserved key.
    public static func checkFieldName(_ name: String) throws {
        try checkIdentifier(name, what: "field name")
        if reservedFieldNames.contains(name) {
            throw CumulusError(.invalidArguments, "field name '\(name)' is reserved for a system field", field: name)
        }
    }

    static func checkASCII(_ text: String, what: String) throws {
        let utf8 = text.utf8
        guard !utf8.isEmpty else {
            throw CumulusError(.invalidArguments, "\(what) must not be empty")
        }
        guard utf8.count <= Limits.maxNameLength else {
            throw CumulusError(
                .invalidArguments, "\(what) is \(utf8.count) characters long; the limit is \(Limits.maxNameLength)")
        }
        for byte in utf8 where byte < 0x20 || byte > 0x7E {
            throw CumulusError(
                .invalidArguments,
                "\(what) '\(text)' must be printable ASCII; found byte 0x\(String(byte, radix: 16))")
        }
    }

    static func checkIdentifier(_ text: String, what: String) throws {
        // The view, not a copy: every field key of every saved record passes here,
        // and copying each to an array was 14 allocations per saved record.
        let utf8 = text.utf8
        guard let first = utf8.first else {
            throw CumulusError(.invalidArguments, "\(what) must not be empty")
        }
        guard utf8.count <= Limits.maxNameLength else {
            throw CumulusError(
                .invalidArguments, "\(what) is \(utf8.count) characters long; the limit is \(Limits.maxNameLength)")
        }
        guard isLetter(first) else {
            throw CumulusError(.invalidArguments, "\(what) '\(text)' must start with an ASCII letter")
        }
        for byte in utf8 where !(isLetter(byte) || isDigit(byte) || byte == UInt8(ascii: "_")) {
            throw CumulusError(
                .invalidArguments,
                "\(what) '\(text)' may contain only ASCII letters, digits and '_'")
        }
    }

    static func isLetter(_ b: UInt8) -> Bool { (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) }
    static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }
}
