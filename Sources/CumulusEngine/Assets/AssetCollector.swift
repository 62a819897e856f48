import CumulusLog
import CumulusModel
import CumulusViews
import Foundation

/// Deletes asset files nothing can reach any more (issue 17): a file goes only when
///
/// 1. no current record holds it,
/// 2. no record version the retained log still holds does — the last commit that
///    saved a version holding it is older than the first retained commit
///    (``AssetReferences/isReachable(retainedFrom:)``), and
/// 3. it was stored (or uploaded again) longer than ``grace`` ago, longer than an
///    upload's receipt lives: an upload whose record save has not committed yet must
///    find its file.
///
/// (1) and (2) are asked again, with (3), under the store's lock that uploads take
/// to place or touch a file (``AssetStore/remove(_:ifStoredBefore:stillUnreferenced:)``),
/// so a file an upload has just vouched for is never deleted. Each node collects its
/// own store, from its own views and log; `cumulus serve` runs it in the background
/// and `cumulus collect-assets` once.
public struct AssetCollector: Sendable {
    /// The node whose files are collected.
    public let container: Container
    /// How long after it was stored or uploaded again a file is safe from collection.
    public var grace: Duration

    /// The default grace: the upload URL's and receipt's 15 minutes, plus 5 for a
    /// save that took its receipt late and the clocks of a cluster.
    public static let defaultGrace: Duration = AssetUploadTicket.lifetime + .seconds(5 * 60)

    /// A collector for `container`'s store.
    public init(container: Container, grace: Duration = Self.defaultGrace) {
        self.container = container
        self.grace = grace
    }

    /// What one collection did.
    public struct Report: Sendable, Equatable {
        /// Files kept because a record version can reach them.
        public var referenced = 0
        /// Files unreferenced but inside the grace.
        public var young = 0
        /// Files deleted.
        public var collected: [AssetChecksum] = []
        /// Interrupted uploads deleted from `incoming/`.
        public var abandonedUploads = 0
    }

    /// Collects once, as of `now`.
    public func collect(now: Date = Date()) throws -> Report {
        let cutoff = now.addingTimeInterval(-grace.seconds)
        var report = Report()
        let (store, views, files) = (container.store, container.views, container.assets)
        func reachable(_ checksum: AssetChecksum) throws -> Bool {
            // The first retained commit only grows, so one read late is conservative.
            let first = store.firstRetained
            return try store.environment.read { txn in
                try views.assetReferences(checksum, in: txn)?.isReachable(retainedFrom: first) ?? false
            }
        }
        for checksum in try files.storedChecksums() {
            if try reachable(checksum) {
                report.referenced += 1
            } else if try files.remove(checksum, ifStoredBefore: cutoff, stillUnreferenced: { try !reachable(checksum) }) {
                report.collected.append(checksum)
            } else {
                report.young += 1
            }
        }
        report.abandonedUploads = files.removeAbandonedUploads(before: cutoff)
        return report
    }

    /// Collects every `interval` until the task is cancelled; failures are handed
    /// to `onFailure` and the next round tries again.
    public func run(every interval: Duration, onReport: @Sendable (Report) -> Void = { _ in },
                    onFailure: @Sendable (any Error) -> Void = { _ in }) async {
        while !Task.isCancelled {
            do {
                onReport(try collect())
            } catch {
                onFailure(error)
            }
            try? await Task.sleep(for: interval)
        }
    }
}
