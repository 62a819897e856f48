import CumulusModel

/// Builds random but valid records that cover every field type and the edges the
/// encoding must survive: empty lists, 255-character names, multi-byte strings,
/// extreme numbers.
public struct RandomRecords {
    public var rng: SeededRandom

    public init(seed: UInt64) { rng = SeededRandom(seed: seed) }

    public mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &rng) }
    public mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &rng) < p }

    /// `bytes` damaged for a hostile-input test: cut short before their end on even
    /// rounds, one to four bytes flipped (XOR with a non-zero byte) on odd ones.
    public mutating func damaged(_ bytes: [UInt8], round: Int) -> [UInt8] {
        var bytes = bytes
        if round % 2 == 0 {
            bytes = Array(bytes.prefix(int(0...max(bytes.count - 1, 0))))
        } else {
            for _ in 0..<int(1...4) where !bytes.isEmpty {
                bytes[int(0...bytes.count - 1)] ^= UInt8.random(in: 1...255, using: &rng)
            }
        }
        return bytes
    }

    public static let identifierHead = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    public static let identifierTail = identifierHead + Array("0123456789_")
    public static let printable = (0x20...0x7E).map { Character(UnicodeScalar(UInt8($0))) }
    public static let textPieces: [String] = [
        "a", "Z", " ", "\t", "\n", "é", "e\u{301}", "ß", "日本", "😀", "👩‍👩‍👧", "\u{0}", "Ω", "word", "  ",
    ]

    public mutating func identifier(maxLength: Int = 20) -> String {
        let length = chance(0.05) ? 255 : int(1...maxLength)
        var text = String(Self.identifierHead[int(0...Self.identifierHead.count - 1)])
        for _ in 1..<length { text.append(Self.identifierTail[int(0...Self.identifierTail.count - 1)]) }
        return text
    }

    public mutating func asciiName(maxLength: Int = 30) -> String {
        let length = chance(0.05) ? 255 : int(1...maxLength)
        var text = ""
        for _ in 0..<length { text.append(Self.printable[int(0...Self.printable.count - 1)]) }
        if text.first == "_" { text = "x" + text.dropFirst() }
        return text
    }

    public mutating func text() -> String {
        var text = ""
        for _ in 0..<int(0...12) { text += Self.textPieces[int(0...Self.textPieces.count - 1)] }
        return text
    }

    public mutating func int64() -> Int64 {
        switch int(0...4) {
        case 0: return .max
        case 1: return .min
        case 2: return 0
        default: return Int64.random(in: .min ... .max, using: &rng)
        }
    }

    public mutating func double() -> Double {
        switch int(0...6) {
        case 0: return .greatestFiniteMagnitude
        case 1: return -.greatestFiniteMagnitude
        case 2: return .leastNonzeroMagnitude
        case 3: return 0
        case 4:
            let bits = Double(bitPattern: UInt64.random(in: 0 ... .max, using: &rng))
            return bits.isFinite ? bits : 1.5
        default: return Double.random(in: -1e300...1e300, using: &rng)
        }
    }

    public mutating func timestamp() -> Timestamp { Timestamp(millisecondsSince1970: int64()) }

    public mutating func location() -> Location {
        Location(
            latitude: Double.random(in: -90...90, using: &rng),
            longitude: Double.random(in: -180...180, using: &rng),
            altitude: chance(0.5) ? double() : nil,
            horizontalAccuracy: chance(0.5) ? Double.random(in: 0...1000, using: &rng) : nil,
            verticalAccuracy: chance(0.5) ? Double.random(in: 0...1000, using: &rng) : nil,
            course: chance(0.5) ? Double.random(in: 0..<360, using: &rng) : nil,
            speed: chance(0.5) ? Double.random(in: 0...300, using: &rng) : nil,
            timestamp: chance(0.5) ? timestamp() : nil)
    }

    public mutating func reference(in zone: ZoneID) -> Reference {
        Reference(
            recordID: RecordID(recordName: asciiName(), zoneID: zone),
            action: Reference.Action.allCases[int(0...2)])
    }

    public mutating func scalar(_ type: FieldValue.ValueType, zone: ZoneID, encryptable: Bool = false) -> FieldValue {
        switch type {
        case .string: return .string(text())
        case .int64: return .int64(int64())
        case .double: return .double(double())
        case .timestamp: return .timestamp(timestamp())
        case .bytes: return .bytes((0..<int(0...40)).map { _ in UInt8.random(in: 0...255, using: &rng) })
        case .reference: return .reference(reference(in: zone))
        case .location: return .location(location())
        case .asset:
            return .asset(
                Asset(
                    fileChecksum: asciiName(), size: Int64(int(0...1_000_000)),
                    referenceChecksum: chance(0.5) ? asciiName() : nil,
                    wrappingKey: chance(0.5) ? asciiName() : nil,
                    receipt: chance(0.5) ? asciiName() : nil))
        }
    }

    public mutating func value(zone: ZoneID, encrypted: Bool = false) -> FieldValue {
        let types = encrypted
            ? FieldValue.ValueType.allCases.filter { $0 != .reference && $0 != .asset }
            : FieldValue.ValueType.allCases
        let type = types[int(0...types.count - 1)]
        if chance(0.25) {
            let count = chance(0.2) ? 0 : int(1...6)
            return .list((0..<count).map { _ in scalar(type, zone: zone) })
        }
        return scalar(type, zone: zone)
    }

    public mutating func recordID() -> RecordID {
        let zone = chance(0.5) ? ZoneID.default : ZoneID(zoneName: asciiName(), ownerName: asciiName())
        return RecordID(recordName: asciiName(), zoneID: zone)
    }

    /// A valid record for the private database, with system fields set as the
    /// server would set them (or unset, as on a new record).
    public mutating func record() -> Record {
        let id = recordID()
        var record = Record(recordType: identifier(), recordID: id)
        for _ in 0..<int(0...10) {
            let key = identifier()
            if NameRules.reservedFieldNames.contains(key) { continue }
            record[key] = value(zone: id.zoneID)
        }
        if chance(0.3) {
            for _ in 0..<int(1...3) {
                let key = String(("enc" + identifier()).prefix(Limits.maxNameLength))
                if record[key] == nil { record[encrypted: key] = value(zone: id.zoneID, encrypted: true) }
            }
        }
        if chance(0.7) {
            record.creationDate = timestamp()
            record.modificationDate = timestamp()
            record.creatorUserRecordID = RecordID(recordName: "_" + asciiName(maxLength: 32))
            record.lastModifiedUserRecordID = RecordID(recordName: "_" + asciiName(maxLength: 32))
            record.recordChangeTag = asciiName(maxLength: 8)
        }
        if chance(0.3) { record.parent = Reference(recordID: RecordID(recordName: asciiName(), zoneID: id.zoneID)) }
        if chance(0.1) {
            record.share = Reference(recordID: RecordID(recordName: asciiName(), zoneID: id.zoneID))
        }
        record.clearChangedKeys()
        return record
    }
}
