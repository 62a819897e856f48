import CumulusModel
import Synchronization

/// The pending token entries of recently searched zones, as read in one LMDB snapshot
/// (``PendingTokens/Overlay``): up to ``PendingTokens/mergeThreshold`` entries are read
/// and indexed by word once per commit, not once per token search (reading them per
/// search cut the query suite's token searches to a fifth).
///
/// Keyed by zone key and snapshot ID (`LMDBReadTransaction.snapshotID()`), so a search in
/// a newer snapshot never sees an older overlay. Bounded: past ``capacity`` zones it
/// starts again empty.
final class PendingOverlayCache: Sendable {
    /// Zones remembered at most.
    static let capacity = 64

    private let overlays = Mutex<[HashedBytes: (snapshot: UInt64, overlay: PendingTokens.Overlay)]>([:])

    /// The overlay of `zoneKey` read in `snapshot`, if remembered.
    func overlay(zoneKey: [UInt8], snapshot: UInt64) -> PendingTokens.Overlay? {
        overlays.withLock { cache in
            guard let entry = cache[HashedBytes(zoneKey)], entry.snapshot == snapshot else { return nil }
            return entry.overlay
        }
    }

    /// Remembers `overlay` as `zoneKey`'s in `snapshot`, unless a newer snapshot's is kept.
    func remember(_ overlay: PendingTokens.Overlay, zoneKey: [UInt8], snapshot: UInt64) {
        let key = HashedBytes(zoneKey)
        overlays.withLock { cache in
            if let kept = cache[key], kept.snapshot > snapshot { return }
            if cache[key] == nil, cache.count >= Self.capacity { cache.removeAll(keepingCapacity: true) }
            cache[key] = (snapshot, overlay)
        }
    }
}
