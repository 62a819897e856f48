import CumulusModel
import Foundation

/// One field's change between two versions of a record: from what to what.
///
/// Encrypted values are compared but never rendered: ``description`` says only that
/// one changed.
public struct FieldChange: Sendable, Hashable, CustomStringConvertible {
    /// The field's key.
    public var key: String
    /// The value before (`nil`: absent).
    public var old: FieldValue?
    /// The value after (`nil`: removed).
    public var new: FieldValue?
    /// Whether the key is in the encrypted key space.
    public var isEncrypted: Bool

    /// A change.
    public init(key: String, old: FieldValue?, new: FieldValue?, isEncrypted: Bool) {
        self.key = key
        self.old = old
        self.new = new
        self.isEncrypted = isEncrypted
    }

    /// The fields that differ between `old` and `new` (either may be absent), by key;
    /// plain fields first, then encrypted ones.
    public static func between(_ old: Record?, _ new: Record?) -> [FieldChange] {
        func changes(_ a: [String: FieldValue], _ b: [String: FieldValue], encrypted: Bool) -> [FieldChange] {
            Set(a.keys).union(b.keys).sorted().compactMap { key in
                a[key] == b[key] ? nil : FieldChange(key: key, old: a[key], new: b[key], isEncrypted: encrypted)
            }
        }
        return changes(old?.fields ?? [:], new?.fields ?? [:], encrypted: false)
            + changes(old?.encryptedValues ?? [:], new?.encryptedValues ?? [:], encrypted: true)
    }

    /// `key: old → new`, values as CloudKit JSON; `(none)` for absent.
    public var description: String {
        if isEncrypted {
            let what = old == nil ? "set" : new == nil ? "removed" : "changed"
            return "\(key): encrypted value \(what)"
        }
        return "\(key): \(Self.render(old)) → \(Self.render(new))"
    }

    /// A value as compact CloudKit JSON (`(none)` for absent).
    public static func render(_ value: FieldValue?) -> String {
        guard let value else { return "(none)" }
        guard let data = try? value.wireValue.serialized() else { return "?" }
        return String(decoding: data, as: UTF8.self)
    }
}
