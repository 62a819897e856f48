/// An etcd transaction: if every comparison holds, the `success` operations run,
/// otherwise the `failure` ones, atomically at one revision. This is how a node takes
/// the leader key only if nobody holds it, and the next epoch only if nobody took it
/// first.
public struct EtcdTransaction: Sendable, Hashable {
    /// A condition on one key.
    public enum Comparison: Sendable, Hashable {
        /// The key's create revision equals `revision` (0: the key does not exist).
        case createRevision(String, equals: Int64)
        /// The key's mod revision equals `revision` (0: the key does not exist).
        case modRevision(String, equals: Int64)
        /// The key's value equals `value`.
        case value(String, equals: [UInt8])
    }

    /// One operation of a branch.
    public enum Operation: Sendable, Hashable {
        /// Writes `value` under `key`, bound to `lease` if given.
        case put(String, [UInt8], lease: Int64?)
        /// Reads `key` (its result is in ``Outcome/reads``, in branch order).
        case get(String)
        /// Deletes `key`.
        case delete(String)
    }

    /// What a transaction did.
    public struct Outcome: Sendable, Hashable {
        /// Whether every comparison held (the `success` branch ran).
        public var succeeded: Bool
        /// The result of each ``Operation/get(_:)`` of the branch that ran, in order:
        /// the key, or `nil` if it does not exist.
        public var reads: [EtcdKeyValue?]
        /// The store's revision after the transaction.
        public var revision: Int64
    }

    /// The conditions, all of which must hold.
    public var compare: [Comparison]
    /// Run when they hold.
    public var success: [Operation]
    /// Run when one does not.
    public var failure: [Operation]

    /// A transaction.
    public init(compare: [Comparison], success: [Operation], failure: [Operation] = []) {
        self.compare = compare
        self.success = success
        self.failure = failure
    }
}
