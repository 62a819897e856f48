import CumulusEngine
import CumulusModel

/// Records written into answers: from their stored bytes where the read hands those
/// out (lookup, query), from objects otherwise (a modify's results, change feeds),
/// both through ``RecordJSONWriter``. A share record also carries its participants,
/// which its bytes do not hold: it alone is built as a tree (``recordJSON(_:desiredKeys:_:)``).
extension CloudKitAPI {
    /// How `context` asks for records: its numbers' form and assets' download URLs.
    func writingOptions(_ desiredKeys: Set<String>?, _ context: Context) -> RecordJSONWriter.Options {
        RecordJSONWriter.Options(
            desiredKeys: desiredKeys, numbersAsStrings: context.numbersAsStrings, downloadURL: downloadURLs(context))
    }

    /// Opens an answer whose first member is a list of records, written into the
    /// buffer the whole answer goes out from: `{"records":[`. A page written apart and
    /// then copied into its envelope was two or more copies of every byte of the
    /// answer. The records lead their object's members for that (JSON objects are
    /// unordered; the order is fixed): the members after them, a cursor or a sync
    /// token, are known only once the page is read.
    static func recordsAnswer(capacity: Int) -> JSONWriter {
        var json = JSONWriter(capacity: capacity)
        openRecords(&json)
        return json
    }

    /// Opens an object whose first member is a list of records, in `json`: the start
    /// of ``recordsAnswer(capacity:)`` and of each zone of a `changes/zone` answer.
    static func openRecords(_ json: inout JSONWriter) {
        json.beginObject()
        json.key("records")
        json.beginArray()
    }

    /// Closes what ``recordsAnswer(capacity:)`` opened: the list of records, then
    /// `members` in ascending key order, then the object.
    static func closeRecords(_ json: inout JSONWriter, _ members: [String: JSONValue] = [:]) {
        json.endArray()
        json.members(members)
        json.endObject()
    }

    /// Writes each record of `page` (borrowed from a read: only during the call) into
    /// `json`, with the page's desired keys.
    func writePage(_ page: StoredRecordPage, _ options: RecordJSONWriter.Options, _ context: Context, into json: inout JSONWriter)
        throws
    {
        var pageOptions = options
        pageOptions.desiredKeys = page.desiredKeys
        for stored in page.records { try writeRecord(stored: stored, pageOptions, context, into: &json) }
    }

    /// Writes the record stored as `stored` (borrowed from a read: only during the
    /// call) into `json`.
    func writeRecord(
        stored: UnsafeRawBufferPointer, _ options: RecordJSONWriter.Options, _ context: Context,
        into json: inout JSONWriter
    ) throws {
        guard RecordJSONWriter.isShare(stored) else {
            return try RecordJSONWriter.write(stored: stored, options, into: &json)
        }
        var hints = RecordDecodeHints()
        json.value(try recordJSON(RecordCodec.decodeForReading(stored, hints: &hints), desiredKeys: options.desiredKeys, context))
    }

    /// Writes `record` into `json`.
    func writeRecord(_ record: Record, _ options: RecordJSONWriter.Options, _ context: Context, into json: inout JSONWriter)
        throws
    {
        guard Share.isShareType(record.recordType) else { return try RecordJSONWriter.write(record, options, into: &json) }
        json.value(try recordJSON(record, desiredKeys: options.desiredKeys, context))
    }
}
