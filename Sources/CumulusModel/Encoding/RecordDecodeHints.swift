/// Strings a run of record decodes is likely to meet again, so a decode can return
/// the string it already has instead of building an equal one: the record's ID when
/// the caller knows which record it asked for (a fetch, a query's candidate), and
/// the type and users of the record decoded before (a page is mostly one type, saved
/// by a few users). A decode checks the stored bytes against each hint and takes it
/// only when they are exactly its UTF-8, so a wrong hint costs a comparison, never
/// a wrong value.
///
/// Record names and user IDs are usually longer than the 15 bytes Swift keeps
/// inline, so each reused one is an allocation and a UTF-8 check saved.
public struct RecordDecodeHints: Sendable {
    /// The ID the caller expects the next record to have.
    public var recordID: RecordID?
    /// The type of the record decoded last.
    var recordType: String?
    /// The last user seen as creator or last modifier.
    var user: RecordID?

    /// Hints expecting `recordID` (or nothing) and remembering nothing yet.
    public init(expecting recordID: RecordID? = nil) {
        self.recordID = recordID
    }
}
