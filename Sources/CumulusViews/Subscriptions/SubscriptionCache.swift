import CumulusModel
import Synchronization

/// Decoded subscription definitions, keyed by their bytes, so matching a record
/// event does not decode each candidate subscription again. Keyed by the bytes
/// rather than the ID, the cache can never serve a stale definition: a replaced
/// subscription has new bytes. Bounded: cleared when full, since refilling is just
/// decoding again.
final class SubscriptionCache: Sendable {
    private let entries = Mutex<[HashedBytes: Subscription]>([:])
    private let capacity: Int

    init(capacity: Int = 4_096) { self.capacity = capacity }

    /// The subscription `definition` encodes.
    func subscription(_ definition: [UInt8]) throws -> Subscription {
        let key = HashedBytes(definition)
        if let cached = entries.withLock({ $0[key] }) { return cached }
        let decoded = try SubscriptionCodec.decode(definition)
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[key] = decoded
        }
        return decoded
    }
}
