import CumulusLog
import CumulusStorage
import Synchronization

/// How far each push token's `webcourierURL` has read its user's notifications, on
/// this node (``DataLayout/Table/webCourier``: SHA-256 of container, environment,
/// user and token → u64 notification sequence).
///
/// CloudKit JS acknowledges nothing: it GETs the same URL again once it has handled
/// an answer. So an answer is remembered in memory as *answered*, and made durable as
/// the token's position only when the next GET comes: a node that stops between the
/// two answers that notification again. Delivery is at least once, never skipping
/// one a client did not ask past. The table is per node and not replicated: a node
/// that never served a token starts from the ticket's `start`, repeating rather than
/// skipping.
///
/// Thread rules: any thread. A position write is a write transaction of its own
/// (LMDB serializes it with the log writer's), one per GET that follows an answer.
final class WebCourierPositions: Sendable {
    private let environment: LMDBEnvironment
    /// `nil` on a read-only node whose directory predates the table: positions are
    /// then kept in memory only, as on any read-only node.
    private let table: LMDBTable?
    private let answered = Mutex<[[UInt8]: UInt64]>([:])

    init(environment: LMDBEnvironment) throws {
        self.environment = environment
        table = environment.options.readOnly
            ? try? DataLayout.open(.webCourier, in: environment) : try DataLayout.open(.webCourier, in: environment)
    }

    /// Records that `key`'s URL was answered through notification `sequence`.
    func answered(_ key: [UInt8], through sequence: UInt64) {
        answered.withLock { $0[key] = max($0[key] ?? 0, sequence) }
    }

    /// Makes what `key`'s URL was answered durable (its client asked again), and
    /// returns where it reads from next: the stored position, or `nil` if none.
    func acknowledge(_ key: [UInt8]) throws -> UInt64? {
        let pending = answered.withLock { $0.removeValue(forKey: key) }
        let stored = try self.stored(key)
        guard let pending, pending > stored ?? 0 else { return stored }
        // A read-only node (a replayed copy) keeps positions in memory only.
        guard let table, !environment.options.readOnly else {
            answered(key, through: pending)
            return pending
        }
        try environment.write { txn in try txn.put(table, key: key, value: BigEndian.bytes(pending)) }
        return pending
    }

    /// The stored position of `key`, without acknowledging anything.
    func stored(_ key: [UInt8]) throws -> UInt64? {
        guard let table else { return nil }
        return try environment.read { txn in
            try txn.withValue(table, key: key) { BigEndian.decode(UInt64.self, from: $0) } ?? nil
        }
    }
}
