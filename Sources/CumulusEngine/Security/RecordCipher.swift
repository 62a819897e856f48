import Crypto
import CumulusModel
import Foundation

/// Client-side encryption of a record's encrypted key space (`Docs/DATA-MODEL.md`,
/// "Encrypted values"): what CloudKit's own client does before a value leaves the
/// device, for a server-side Swift user of Cumulus. The server stores and returns only the ciphertext, as opaque bytes.
///
/// A value is sealed with AES-GCM under the caller's 256-bit key: its CloudKit wire form
/// (`{"value": …, "type": …}`, so every type that may be encrypted round-trips) is the
/// plaintext, and the record's ID and the field's key are the authenticated data, so a
/// ciphertext copied into another field or another record does not open. The stored
/// bytes are AES-GCM's combined form: 12-byte nonce ‖ ciphertext ‖ 16-byte tag.
///
/// ```swift
/// let cipher = try RecordCipher(key: key)
/// try cipher.encrypt(.string("Maria Ruiz"), into: &record, key: "ownerName")
/// let name = try cipher.decrypt(record, key: "ownerName")   // .string("Maria Ruiz")
/// ```
public struct RecordCipher: Sendable {
    private let key: SymmetricKey

    /// A cipher with `key`, which must be 256 bits (`SymmetricKey(size: .bits256)`).
    public init(key: SymmetricKey) throws {
        guard key.bitCount == 256 else {
            throw CumulusError(.invalidArguments, "an encryption key is 256 bits, not \(key.bitCount)")
        }
        self.key = key
    }

    /// Encrypts `value` and stores it as `key` in `record`'s encrypted key space (`nil`
    /// removes it). References and assets cannot be encrypted (the server refuses them).
    public func encrypt(_ value: FieldValue?, into record: inout Record, key field: String) throws {
        record[encrypted: field] = try value.map { try seal($0, field: field, of: record.recordID) }
    }

    /// The plaintext of `key` in `record`'s encrypted key space, or `nil` if it has none.
    /// Throws `invalidArguments` if it does not open with this cipher's key: another
    /// key, another record or field, or altered bytes.
    public func decrypt(_ record: Record, key field: String) throws -> FieldValue? {
        try record[encrypted: field].map { try open($0, field: field, of: record.recordID) }
    }

    /// `value` sealed for `field` of the record `recordID`: the bytes to store.
    public func seal(_ value: FieldValue, field: String, of recordID: RecordID) throws -> FieldValue {
        let plaintext = try value.wireField.serialized()
        do {
            let box = try AES.GCM.seal(plaintext, using: key, authenticating: Self.context(field, recordID))
            guard let combined = box.combined else {
                throw CumulusError(.internalError, "AES-GCM gave no combined form for \(field)")
            }
            return .bytes(Array(combined))
        } catch let error as CumulusError {
            throw error
        } catch {
            throw CumulusError(.internalError, "encrypting \(field) failed: \(error)")
        }
    }

    /// The value `sealed` holds, sealed for `field` of the record `recordID`.
    public func open(_ sealed: FieldValue, field: String, of recordID: RecordID) throws -> FieldValue {
        guard case .bytes(let bytes) = sealed else {
            throw CumulusError(.invalidArguments, "\(field) holds a \(sealed.wireTypeName), not encrypted bytes", field: field)
        }
        let plaintext: Data
        do {
            let box = try AES.GCM.SealedBox(combined: Data(bytes))
            plaintext = try AES.GCM.open(box, using: key, authenticating: Self.context(field, recordID))
        } catch {
            throw CumulusError(
                .invalidArguments,
                "\(field) does not decrypt with this key: another key, another record or field, or altered bytes",
                field: field)
        }
        return try FieldValue(wireField: try JSONValue.parse(plaintext), field: field, defaultZone: recordID.zoneID)
    }

    /// What a ciphertext is bound to: the field's key and the record's full ID.
    private static func context(_ field: String, _ recordID: RecordID) -> Data {
        var writer = BinaryWriter(capacity: 128)
        writer.string("cumulus.encryptedValue.v1")
        writer.string(field)
        writer.string(recordID.recordName)
        writer.zoneID(recordID.zoneID)
        return Data(writer.bytes)
    }
}
