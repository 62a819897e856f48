import Testing
@testable import CumulusModel

/// Checks that `record`, decoded from `bytes` by one of the partial decoders (values
/// kept in their bytes, checked up front or as read), answers every read as `eager`,
/// the full decode of the same bytes, does: single values before and after the shared
/// cache fills, absent keys, the key list, equality both ways, hash, and re-encoding.
/// One list of checks for every decoder, so they cannot drift apart.
func expectAgreement(of record: Record, with eager: Record, bytes: [UInt8], _ label: String) throws {
    // Single values first, before anything fills the shared cache.
    for key in eager.fields.keys { #expect(record[key] == eager[key], "\(label): field \(key)") }
    for key in eager.encryptedValues.keys {
        #expect(record[encrypted: key] == eager[encrypted: key], "\(label): encrypted \(key)")
    }
    #expect(record["no such key"] == nil && record[encrypted: "no such key"] == nil)
    #expect(record.allKeys == eager.allKeys, "\(label): keys")
    #expect(record == eager && eager == record, "\(label): equality")
    #expect(record.hashValue == eager.hashValue, "\(label): hash")
    #expect(try RecordCodec.encode(record) == bytes, "\(label): re-encode")
    #expect(record.fields == eager.fields && record.encryptedValues == eager.encryptedValues)
    // After the cache is filled, single reads come from it and still agree.
    for key in eager.fields.keys { #expect(record[key] == eager[key], "\(label): cached \(key)") }
}
