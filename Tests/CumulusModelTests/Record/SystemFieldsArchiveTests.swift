import Testing
@testable import CumulusModel
import CumulusTestSupport

@Suite("encodeSystemFields")
struct SystemFieldsArchiveTests {
    @Test("an archive rebuilds an empty shell with the same system fields and change tag")
    func archiveRebuildsShell() throws {
        var random = RandomRecords(seed: 7)
        for _ in 0..<500 {
            var record = random.record()
            record.recordChangeTag = "tag-\(random.int(0...1000))"
            let shell = try Record(systemFieldsArchive: record.encodeSystemFields())
            #expect(shell.recordID == record.recordID)
            #expect(shell.recordType == record.recordType)
            #expect(shell.recordChangeTag == record.recordChangeTag)
            #expect(shell.creationDate == record.creationDate)
            #expect(shell.modificationDate == record.modificationDate)
            #expect(shell.creatorUserRecordID == record.creatorUserRecordID)
            #expect(shell.lastModifiedUserRecordID == record.lastModifiedUserRecordID)
            #expect(shell.fields.isEmpty && shell.encryptedValues.isEmpty && shell.changedKeys.isEmpty)
            #expect(shell.parent == nil && shell.share == nil)
        }
    }

    @Test("a record encoding, truncated archive or garbage is refused")
    func foreignBytesAreRefused() throws {
        let record = Record(recordType: "T", recordID: RecordID(recordName: "r"))
        #expect(throws: CumulusError.self) { try Record(systemFieldsArchive: RecordCodec.encode(record)) }
        let archive = record.encodeSystemFields()
        for cut in 0..<archive.count {
            #expect(throws: CumulusError.self) { try Record(systemFieldsArchive: Array(archive.prefix(cut))) }
        }
        #expect(throws: CumulusError.self) { try Record(systemFieldsArchive: archive + [1]) }
    }
}
