/// One key as etcd holds it: its bytes, and the revisions that let a transaction
/// compare against exactly this version of it.
public struct EtcdKeyValue: Sendable, Hashable {
    /// The key.
    public var key: [UInt8]
    /// The value.
    public var value: [UInt8]
    /// The revision that created the key (it changes only when the key is deleted and
    /// created again).
    public var createRevision: Int64
    /// The revision of its last change.
    public var modRevision: Int64
    /// Changes since it was created (1 after the first put).
    public var version: Int64
    /// The lease the key is bound to, 0 if none: the key goes when the lease does.
    public var lease: Int64

    /// A key as etcd returned it.
    public init(key: [UInt8], value: [UInt8], createRevision: Int64, modRevision: Int64, version: Int64, lease: Int64) {
        self.key = key
        self.value = value
        self.createRevision = createRevision
        self.modRevision = modRevision
        self.version = version
        self.lease = lease
    }

    /// The key as text (cluster keys are ASCII paths).
    public var keyText: String { String(decoding: key, as: UTF8.self) }
}

/// A change a watch reported.
public enum EtcdWatchEvent: Sendable, Hashable {
    /// The key was written (created or changed).
    case put(EtcdKeyValue)
    /// The key was deleted, or its lease ended; `revision` is when.
    case delete(key: [UInt8], revision: Int64)
}
