/// A record's CloudKit JSON (`Docs/HTTP-API.md`, "Records on the wire") written
/// straight from its stored bytes
/// (``RecordCodec``'s format) into a ``JSONWriter``: no ``Record``, no ``FieldValue``,
/// no ``JSONValue`` tree. The one place that knows how a record is written on the
/// wire; the server's answers that carry records (lookup, query, changes, modify) all
/// come through it, and `RecordJSON.encode` (a tree, for the few answers built as
/// trees) is checked against it by the tests.
///
/// The output is byte for byte what `JSONEncoder` with sorted keys made of the tree
/// the server built before: members in ascending key order, the plain and encrypted
/// fields merged by key into `fields` (an encrypted value's type prefixed
/// `ENCRYPTED_`; where both spaces hold a key, the encrypted one), numbers and dates
/// in the same forms.
///
/// **What it checks.** Everything ``RecordCodec/decode(_:)`` checks of the bytes it
/// walks, as it walks them: a stored record is the server's own, but a damaged one
/// must be an error (`internalError`), never JSON that says something else. On an
/// error the writer is left as it was before the record.
///
/// **Lifetime.** `stored` is only read during the call: it may point into an LMDB
/// map, valid until its read transaction ends (``RecordReader``'s rule).
public enum RecordJSONWriter {
    /// How a read asked for its records.
    public struct Options: Sendable {
        /// The user fields and encrypted values written (`nil`: all); system fields
        /// always are.
        public var desiredKeys: Set<String>? {
            didSet { desiredBytes = Self.bytes(of: desiredKeys) }
        }
        /// ``desiredKeys`` as UTF-8, compared with stored keys as bytes: made once per
        /// read, not per record.
        private(set) var desiredBytes: [[UInt8]]?
        /// INT64, DOUBLE and TIMESTAMP field values as strings (a client's
        /// `numbersAsStrings`); list elements stay numbers.
        public var numbersAsStrings: Bool
        /// Each asset's `downloadURL` (reads; not a modify's echo), `nil` for none.
        public var downloadURL: (@Sendable (Asset) -> String?)?

        /// Options; the defaults write every field as stored, without download URLs.
        public init(
            desiredKeys: Set<String>? = nil, numbersAsStrings: Bool = false,
            downloadURL: (@Sendable (Asset) -> String?)? = nil
        ) {
            self.desiredKeys = desiredKeys
            self.desiredBytes = Self.bytes(of: desiredKeys)
            self.numbersAsStrings = numbersAsStrings
            self.downloadURL = downloadURL
        }

        private static func bytes(of keys: Set<String>?) -> [[UInt8]]? {
            keys.map { keys in keys.map { Array($0.utf8) } }
        }
    }

    /// The wire type prefix of a value in the encrypted key space.
    public static let encryptedPrefix = "ENCRYPTED_"

    /// Per value tag, a field's dictionary up to its value, `{"type":"INT64","value":`
    /// (`"STRING_LIST"` for a list's tag), written as one copy rather than built per
    /// field; empty for tags no value has.
    /// Kept in one allocation that lives as long as the process, read through a
    /// pointer: a table of arrays retained and released its row on every field.
    static let fieldOpenings = OpeningTable(prefix: "")
    /// The same in the encrypted key space (`"ENCRYPTED_BYTES"`).
    static let encryptedFieldOpenings = OpeningTable(prefix: encryptedPrefix)

    /// Per value tag, the opening's bytes: one buffer, never freed (two exist).
    struct OpeningTable: @unchecked Sendable {
        private let bytes: UnsafeRawBufferPointer
        private let ranges: UnsafeBufferPointer<Range<Int>>

        init(prefix: String) {
            var text: [UInt8] = []
            var ranges = [Range<Int>](repeating: 0..<0, count: 256)
            for type in FieldValue.ValueType.allCases {
                for (tag, name) in [(type.rawValue, type.wireName), (RecordCodec.listFlag | type.rawValue, type.listWireName)] {
                    let start = text.count
                    text += "{\"type\":\"\(prefix)\(name)\",\"value\":".utf8
                    ranges[Int(tag)] = start..<text.count
                }
            }
            let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(text.count, 1), alignment: 1)
            storage.copyBytes(from: text)
            bytes = UnsafeRawBufferPointer(storage)
            let table = UnsafeMutableBufferPointer<Range<Int>>.allocate(capacity: 256)
            _ = table.initialize(from: ranges)
            self.ranges = UnsafeBufferPointer(table)
        }

        /// The opening for `tag`; empty for tags no value has.
        subscript(tag: UInt8) -> UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: bytes[ranges[Int(tag)]]) }
    }

    /// The record type a share record is stored under.
    static let shareType: StaticString = "cloudkit.share"

    /// Whether the stored record is a share (`cloudkit.share`), whose answer carries
    /// its participants as well, which these bytes do not hold. Reads only the type.
    public static func isShare(_ stored: UnsafeRawBufferPointer) -> Bool {
        var reader = BinaryReader(stored, context: "record")
        guard (try? reader.u8()) == RecordCodec.formatVersion, let type = try? reader.rawSlice(reader.length()) else {
            return false
        }
        return shareType.withUTF8Buffer { UTF8Order.compare(UnsafeRawBufferPointer($0), type) == 0 }
    }

    /// Writes `record`, encoded first: for records that are objects already (a
    /// modify's results, a conflict's server record).
    public static func write(_ record: Record, _ options: Options, into json: inout JSONWriter) throws(CumulusError) {
        let bytes: [UInt8]
        do {
            bytes = try RecordCodec.encode(record)
        } catch let error as CumulusError {
            throw record.storedValuesFailure ?? error
        } catch {
            throw CumulusError(.internalError, "record \(record.recordID.recordName) could not be encoded: \(error)")
        }
        // `withUnsafeBytes` rethrows untyped: the error comes out as a result.
        let outcome = bytes.withUnsafeBytes { buffer in
            Result { () throws(CumulusError) in try write(stored: buffer, options, into: &json) }
        }
        try outcome.get()
    }

    /// Writes the record stored as `stored` as one JSON value.
    public static func write(stored: UnsafeRawBufferPointer, _ options: Options, into json: inout JSONWriter)
        throws(CumulusError)
    {
        let mark = json.count
        let comma = json.separatorPending
        var walk = Walk(stored: stored, options: options)
        do {
            try walk.write(into: &json)
        } catch {
            json.rollBack(to: mark, needsComma: comma)
            let reason = (error as? CumulusError)?.message ?? "\(error)"
            let name = walk.name.flatMap { String(validating: $0, as: UTF8.self) } ?? "?"
            throw CumulusError(.internalError, "the stored values of record \(name) are damaged (\(reason))")
        }
    }

    /// One record's walk: its header read into slices of the stored bytes, then
    /// written in the answer's member order.
    private struct Walk {
        let stored: UnsafeRawBufferPointer
        let options: Options
        var name: UnsafeRawBufferPointer?

        init(stored: UnsafeRawBufferPointer, options: Options) {
            self.stored = stored
            self.options = options
        }

        /// The home zone's two strings: references stored without a zone point there.
        struct Zone {
            var name: UnsafeRawBufferPointer
            var owner: UnsafeRawBufferPointer
        }

        /// A stored reference: its record name, zone and action.
        struct StoredReference {
            var name: UnsafeRawBufferPointer
            var zone: Zone
            var action: Reference.Action
        }

        mutating func write(into json: inout JSONWriter) throws {
            var reader = BinaryReader(stored, context: "record")
            let version = try reader.u8()
            guard version == RecordCodec.formatVersion else {
                throw reader.failure("unsupported record format \(version) (this build reads \(RecordCodec.formatVersion))")
            }
            let type = try reader.rawSlice(reader.length())
            let name = try reader.rawSlice(reader.length())
            self.name = name
            let home = Zone(name: try Self.string(&reader), owner: try Self.string(&reader))
            let mask = try reader.u8()
            guard mask & 0x80 == 0 else { throw reader.failure("unknown system-field bits \(mask)") }
            let created = mask & RecordCodec.hasCreationDate != 0 ? try reader.zigzag() : nil
            let modified = mask & RecordCodec.hasModificationDate != 0 ? try reader.zigzag() : nil
            let creator = mask & RecordCodec.hasCreator != 0 ? try Self.userName(&reader) : nil
            let modifier = mask & RecordCodec.hasLastModifier != 0 ? try Self.userName(&reader) : nil
            let tag = mask & RecordCodec.hasChangeTag != 0 ? try reader.rawSlice(reader.length()) : nil
            let parent = mask & RecordCodec.hasParent != 0 ? try Self.reference(&reader, home: home) : nil
            let share = mask & RecordCodec.hasShare != 0 ? try Self.reference(&reader, home: home) : nil
            // The encrypted section starts where the plain one ends: found by walking
            // the plain one's structure once; the merge below checks every value.
            let plainStart = reader.offset
            try Self.skipSection(&reader)
            let encryptedStart = reader.offset

            // Members in ascending key order, as the sorted tree had them; the fixed
            // text between values is written as one piece each (commas included).
            json.beginObject()
            if let created {
                json.fragment(#""created":"#)
                Self.stamp(created, creator, into: &json)
                json.fragment(#","deleted":false,"fields":"#)
            } else {
                json.fragment(#""deleted":false,"fields":"#)
            }
            try writeFields(plainAt: plainStart, encryptedAt: encryptedStart, home: home, into: &json)
            if let modified {
                json.fragment(#","modified":"#)
                Self.stamp(modified, modifier, into: &json)
            }
            if let parent {
                json.fragment(#","parent":{"recordName":"#)
                json.string(utf8: parent.name)
                json.endObject()
            }
            // The type, name and tag are checked to be UTF-8 as they are written.
            if let tag {
                json.fragment(#","recordChangeTag":"#)
                try Self.string(tag, from: reader, into: &json)
            }
            json.fragment(#","recordName":"#)
            try Self.string(name, from: reader, into: &json)
            json.fragment(#","recordType":"#)
            try Self.string(type, from: reader, into: &json)
            if let share {
                json.fragment(#","share":{"recordName":"#)
                json.string(utf8: share.name)
                json.fragment(#","zoneID":"#)
                Self.zone(share.zone, into: &json)
                json.endObject()
            }
            json.fragment(#","zoneID":"#)
            Self.zone(home, into: &json)
            json.endObject()
        }

        // MARK: Fields

        /// `fields`: the two sections merged by key (both are stored in ascending
        /// order), the encrypted value winning a key both hold.
        private func writeFields(plainAt plainStart: Int, encryptedAt encryptedStart: Int, home: Zone, into json: inout JSONWriter)
            throws
        {
            var plain = BinaryReader(stored, context: "record")
            try plain.seek(to: plainStart)
            var encrypted = BinaryReader(stored, context: "record")
            try encrypted.seek(to: encryptedStart)
            var plainLeft = try plain.length(minimumItemSize: 3)
            var encryptedLeft = try encrypted.length(minimumItemSize: 3)
            // Keys are checked to be UTF-8 by `field`, as they are written.
            var plainKey = plainLeft > 0 ? try plain.rawSlice(plain.length()) : nil
            var encryptedKey = encryptedLeft > 0 ? try encrypted.rawSlice(encrypted.length()) : nil
            /// The key after `key` in its section, checked to sort after it.
            func next(_ reader: inout BinaryReader, after key: UnsafeRawBufferPointer, left: Int) throws
                -> UnsafeRawBufferPointer?
            {
                guard left > 0 else { return nil }
                let next = try reader.rawSlice(reader.length())
                guard UTF8Order.compare(key, next) < 0 else { throw reader.failure("field keys not in strictly ascending order") }
                return next
            }
            json.beginObject()
            while plainKey != nil || encryptedKey != nil {
                let order: Int
                if let plainKey, let encryptedKey {
                    order = UTF8Order.compare(plainKey, encryptedKey)
                } else {
                    order = plainKey == nil ? 1 : -1
                }
                if order < 0, let key = plainKey {
                    try field(key, from: &plain, encrypted: false, home: home, into: &json)
                    plainLeft -= 1
                    plainKey = try next(&plain, after: key, left: plainLeft)
                } else if let key = encryptedKey {
                    if order == 0, let shadowed = plainKey {
                        guard BinaryReader.isValidUTF8(shadowed) else { throw plain.notUTF8() }
                        try Self.skipValue(&plain, home: home)
                        plainLeft -= 1
                        plainKey = try next(&plain, after: shadowed, left: plainLeft)
                    }
                    try field(key, from: &encrypted, encrypted: true, home: home, into: &json)
                    encryptedLeft -= 1
                    encryptedKey = try next(&encrypted, after: key, left: encryptedLeft)
                }
            }
            try encrypted.expectEnd()
            json.endObject()
        }

        /// One field, `{"type", "value"}`, if the read wants `key`; skipped otherwise.
        private func field(
            _ key: UnsafeRawBufferPointer, from reader: inout BinaryReader, encrypted: Bool, home: Zone,
            into json: inout JSONWriter
        ) throws {
            if let desired = options.desiredBytes, !desired.contains(where: { wanted in wanted.withUnsafeBytes { UTF8Order.compare($0, key) == 0 } }) {
                guard BinaryReader.isValidUTF8(key) else { throw reader.notUTF8() }
                return try Self.skipValue(&reader, home: home)
            }
            guard json.key(checkingUTF8: key) else { throw reader.notUTF8() }
            let tag = try reader.u8()
            if tag == RecordCodec.emptyListTag {
                Self.opening(RecordCodec.listFlag | FieldValue.ValueType.string.rawValue, encrypted: encrypted, into: &json)
                json.beginArray()
                json.endArray()
            } else if tag & RecordCodec.listFlag != 0 {
                guard let type = FieldValue.ValueType(rawValue: tag & ~RecordCodec.listFlag) else {
                    throw reader.failure("unknown list element type \(tag & ~RecordCodec.listFlag)")
                }
                Self.opening(tag, encrypted: encrypted, into: &json)
                let count = try reader.length()
                guard count > 0 else { throw reader.failure("empty list written with an element type") }
                json.beginArray()
                for _ in 0..<count { try scalar(type, from: &reader, home: home, topLevel: false, into: &json) }
                json.endArray()
            } else {
                guard let type = FieldValue.ValueType(rawValue: tag) else { throw reader.failure("unknown value type \(tag)") }
                Self.opening(tag, encrypted: encrypted, into: &json)
                try scalar(type, from: &reader, home: home, topLevel: true, into: &json)
            }
            json.endObject()
        }

        /// One value; `topLevel` when it is the field's value, not a list's element
        /// (only those are written as strings for `numbersAsStrings`).
        private func scalar(
            _ type: FieldValue.ValueType, from reader: inout BinaryReader, home: Zone, topLevel: Bool,
            into json: inout JSONWriter
        ) throws {
            let asStrings = topLevel && options.numbersAsStrings
            switch type {
            case .string:
                try Self.string(try reader.rawSlice(reader.length()), from: reader, into: &json)
            case .int64, .timestamp:
                let number = try reader.zigzag()
                if asStrings { json.intString(number) } else { json.int(number) }
            case .double:
                let number = try RecordCodec.readFiniteDouble("double", from: &reader)
                if asStrings { json.string(String(number)) } else { json.double(number) }
            case .bytes:
                json.base64(try reader.rawSlice(reader.length()))
            case .reference:
                Self.reference(try Self.reference(&reader, home: home), into: &json)
            case .location:
                try Self.location(&reader, into: &json)
            case .asset:
                try asset(&reader, into: &json)
            }
        }

        /// An asset: `downloadURL` (when the read hands them out), `fileChecksum`,
        /// `receipt`, `referenceChecksum`, `size`, `wrappingKey`.
        private func asset(_ reader: inout BinaryReader, into json: inout JSONWriter) throws {
            let checksum = try Self.string(&reader)
            let size = try reader.zigzag()
            let mask = try reader.u8()
            guard mask & 0xF8 == 0 else { throw reader.failure("unknown asset bits \(mask)") }
            let referenceChecksum = mask & (1 << 0) != 0 ? try Self.string(&reader) : nil
            let wrappingKey = mask & (1 << 1) != 0 ? try Self.string(&reader) : nil
            let receipt = mask & (1 << 2) != 0 ? try Self.string(&reader) : nil
            json.beginObject()
            if let downloadURL = options.downloadURL {
                func text(_ bytes: UnsafeRawBufferPointer?) -> String? { bytes.map { String(decoding: $0, as: UTF8.self) } }
                let asset = Asset(
                    fileChecksum: String(decoding: checksum, as: UTF8.self), size: size,
                    referenceChecksum: text(referenceChecksum), wrappingKey: text(wrappingKey), receipt: text(receipt))
                if let url = downloadURL(asset) {
                    json.key("downloadURL")
                    json.string(url)
                }
            }
            json.key("fileChecksum")
            json.string(utf8: checksum)
            if let receipt {
                json.key("receipt")
                json.string(utf8: receipt)
            }
            if let referenceChecksum {
                json.key("referenceChecksum")
                json.string(utf8: referenceChecksum)
            }
            json.key("size")
            json.int(size)
            if let wrappingKey {
                json.key("wrappingKey")
                json.string(utf8: wrappingKey)
            }
            json.endObject()
        }

        // MARK: Pieces

        /// A location: its members in key order, the optional ones only when stored.
        private static func location(_ reader: inout BinaryReader, into json: inout JSONWriter) throws {
            let latitude = try RecordCodec.readFiniteDouble("latitude", from: &reader)
            let longitude = try RecordCodec.readFiniteDouble("longitude", from: &reader)
            let mask = try reader.u8()
            guard mask & 0xC0 == 0 else { throw reader.failure("unknown location bits \(mask)") }
            func part(_ bit: UInt8, _ what: String) throws -> Double? {
                mask & (1 << bit) != 0 ? try RecordCodec.readFiniteDouble(what, from: &reader) : nil
            }
            let altitude = try part(0, "altitude")
            let horizontal = try part(1, "horizontalAccuracy")
            let vertical = try part(2, "verticalAccuracy")
            let course = try part(3, "course")
            let speed = try part(4, "speed")
            let timestamp = mask & (1 << 5) != 0 ? try reader.zigzag() : nil
            json.beginObject()
            if let altitude {
                json.key("altitude")
                json.double(altitude)
            }
            if let course {
                json.key("course")
                json.double(course)
            }
            if let horizontal {
                json.key("horizontalAccuracy")
                json.double(horizontal)
            }
            json.key("latitude")
            json.double(latitude)
            json.key("longitude")
            json.double(longitude)
            if let speed {
                json.key("speed")
                json.double(speed)
            }
            if let timestamp {
                json.key("timestamp")
                json.int(timestamp)
            }
            if let vertical {
                json.key("verticalAccuracy")
                json.double(vertical)
            }
            json.endObject()
        }

        /// `created` or `modified`: when, by whom, on which device.
        private static func stamp(_ milliseconds: Int64, _ user: UnsafeRawBufferPointer?, into json: inout JSONWriter) {
            json.beginObject()
            json.fragment(#""deviceID":"Cumulus","timestamp":"#)
            json.int(milliseconds)
            json.fragment(#","userRecordName":"#)
            if let user { json.string(utf8: user) } else { json.raw("\"\"") }
            json.endObject()
        }

        private static func zone(_ zone: Zone, into json: inout JSONWriter) {
            json.beginObject()
            json.fragment(#""ownerRecordName":"#)
            json.string(utf8: zone.owner)
            json.fragment(#","zoneName":"#)
            json.string(utf8: zone.name)
            json.endObject()
        }

        private static func reference(_ reference: StoredReference, into json: inout JSONWriter) {
            json.beginObject()
            switch reference.action {
            case .none: json.fragment(#""action":"NONE","recordName":"#)
            case .deleteSelf: json.fragment(#""action":"DELETE_SELF","recordName":"#)
            case .validate: json.fragment(#""action":"VALIDATE","recordName":"#)
            }
            json.string(utf8: reference.name)
            json.fragment(#","zoneID":"#)
            zone(reference.zone, into: &json)
            json.endObject()
        }

        /// A field's dictionary up to its value: `{"type":"INT64","value":`.
        private static func opening(_ tag: UInt8, encrypted: Bool, into json: inout JSONWriter) {
            json.fragment(encrypted ? RecordJSONWriter.encryptedFieldOpenings[tag] : RecordJSONWriter.fieldOpenings[tag])
        }

        /// A length-prefixed string's bytes, checked to be UTF-8.
        private static func string(_ reader: inout BinaryReader) throws -> UnsafeRawBufferPointer {
            try RecordReader.skipString(&reader, checking: true)
        }

        /// `bytes` as a string value, checked to be UTF-8 as it is written (a failure
        /// names `reader`'s place).
        private static func string(_ bytes: UnsafeRawBufferPointer, from reader: BinaryReader, into json: inout JSONWriter)
            throws
        {
            guard json.string(checkingUTF8: bytes) else { throw reader.notUTF8() }
        }

        /// A user's record ID; only its name is written.
        private static func userName(_ reader: inout BinaryReader) throws -> UnsafeRawBufferPointer {
            let name = try string(&reader)
            _ = try string(&reader)
            _ = try string(&reader)
            return name
        }

        /// A reference as ``RecordCodec`` stores it, checked as it checks one.
        private static func reference(_ reader: inout BinaryReader, home: Zone) throws -> StoredReference {
            let name = try string(&reader)
            var zone = home
            switch try reader.u8() {
            case 0: break
            case 1:
                zone = Zone(name: try string(&reader), owner: try string(&reader))
                if UTF8Order.compare(zone.name, home.name) == 0, UTF8Order.compare(zone.owner, home.owner) == 0 {
                    throw reader.failure("reference spells out the record's own zone")
                }
            case let mode:
                throw reader.failure("unknown reference zone mode \(mode)")
            }
            let rawAction = try reader.u8()
            guard let action = Reference.Action(rawValue: rawAction) else {
                throw reader.failure("unknown reference action \(rawAction)")
            }
            return StoredReference(name: name, zone: zone, action: action)
        }

        /// Past one value, checked as a decode would check it.
        private static func skipValue(_ reader: inout BinaryReader, home: Zone) throws {
            try RecordReader.skipValue(&reader, checking: homeZone(home))
        }

        /// Past one section (count, then keys with their values), its structure only:
        /// the merge that writes it checks it.
        private static func skipSection(_ reader: inout BinaryReader) throws {
            let count = try reader.length(minimumItemSize: 3)
            for _ in 0..<count {
                _ = try reader.rawSlice(reader.length())
                try RecordReader.skipValue(&reader)
            }
        }

        /// The home zone as a ``ZoneID``, what the skipping checks compare references
        /// with. Zone names are short (small strings): building it allocates nothing.
        private static func homeZone(_ home: Zone) -> ZoneID {
            ZoneID(
                zoneName: String(decoding: home.name, as: UTF8.self), ownerName: String(decoding: home.owner, as: UTF8.self))
        }
    }
}
