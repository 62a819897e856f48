import Crypto
import CumulusEngine
import CumulusModel
import Foundation
import Testing

/// The client-side helper for the encrypted key space: AES-GCM under the caller's key,
/// bound to the record and the field.
@Suite("Record cipher")
struct RecordCipherTests {
    static let zone = ZoneID(zoneName: "Lists", ownerName: EngineWorld.user)
    static let values: [FieldValue] = [
        .string("Maria Ruiz"), .int64(-42), .double(2.5), .bytes([0, 255, 7]),
        .timestamp(Timestamp(millisecondsSince1970: 1_790_000_000_123)),
        .location(Location(latitude: 48.85, longitude: 2.35)), .list([.string("a"), .string("b")]),
    ]

    @Test("every encryptable type goes in as ciphertext and comes back equal, through a save and a fetch")
    func roundTrip() async throws {
        let world = try EngineWorld()
        let zone = try await world.makeZone()
        let cipher = try RecordCipher(key: SymmetricKey(size: .bits256))
        var record = Record(recordType: "Diary", recordID: RecordID(recordName: "d1", zoneID: zone))
        for (index, value) in Self.values.enumerated() {
            try cipher.encrypt(value, into: &record, key: "secret\(index)")
        }
        for index in Self.values.indices {
            guard case .bytes(let sealed) = record[encrypted: "secret\(index)"] else {
                Issue.record("secret\(index) is not stored as bytes")
                continue
            }
            #expect(sealed.count >= 12 + 16 + 10, "nonce, tag and ciphertext")
        }
        _ = try await world.save([record])
        let fetched = try world.fetch(record.recordID)
        #expect(fetched.fields.isEmpty)
        for (index, value) in Self.values.enumerated() {
            #expect(try cipher.decrypt(fetched, key: "secret\(index)") == value)
        }
        #expect(try cipher.decrypt(fetched, key: "absent") == nil)
        // Two seals of one value differ (a fresh nonce each time).
        let id = record.recordID
        #expect(try cipher.seal(.string("x"), field: "f", of: id) != cipher.seal(.string("x"), field: "f", of: id))
        // Removing through the helper removes the value.
        try cipher.encrypt(nil, into: &record, key: "secret0")
        #expect(record[encrypted: "secret0"] == nil)
    }

    @Test("refused: another key, another field or record, altered bytes, plain bytes, a key of the wrong size")
    func refusals() throws {
        let key = SymmetricKey(size: .bits256)
        let cipher = try RecordCipher(key: key)
        let id = RecordID(recordName: "d1", zoneID: Self.zone)
        let sealed = try cipher.seal(.string("Maria Ruiz"), field: "ownerName", of: id)
        func refused(_ body: () throws -> FieldValue) -> Bool {
            do {
                _ = try body()
                return false
            } catch let error as CumulusError {
                return error.code == .invalidArguments
            } catch {
                return false
            }
        }
        #expect(try cipher.open(sealed, field: "ownerName", of: id) == .string("Maria Ruiz"))
        #expect(refused { try RecordCipher(key: SymmetricKey(size: .bits256)).open(sealed, field: "ownerName", of: id) })
        #expect(refused { try cipher.open(sealed, field: "clientName", of: id) })
        #expect(refused { try cipher.open(sealed, field: "ownerName", of: RecordID(recordName: "d2", zoneID: Self.zone)) })
        #expect(refused {
            try cipher.open(sealed, field: "ownerName", of: RecordID(recordName: "d1", zoneID: ZoneID(zoneName: "Other", ownerName: EngineWorld.user)))
        })
        guard case .bytes(var bytes) = sealed else {
            Issue.record("not bytes")
            return
        }
        bytes[bytes.count / 2] ^= 1
        #expect(refused { try cipher.open(.bytes(bytes), field: "ownerName", of: id) })
        #expect(refused { try cipher.open(.bytes(Array(bytes.prefix(10))), field: "ownerName", of: id) })
        #expect(refused { try cipher.open(.string("plain"), field: "ownerName", of: id) })
        #expect(throws: CumulusError.self) { try RecordCipher(key: SymmetricKey(size: .bits128)) }
    }
}
