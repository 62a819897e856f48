import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusViews
import Foundation
import Logging

/// Readies a follower's data directory before it is opened (`Docs/ARCHITECTURE.md`, "Replication"): a new
/// follower is seeded from a snapshot of the leader's environment — or, if asked,
/// given only the leader's identity and credentials, to stream the whole log — and
/// `--reseed` moves an existing copy aside (never deletes it) and seeds anew, as
/// happens by itself to a copy that is behind the leader's retained log.
public enum FollowerSeeder {
    /// How a new follower gets its starting state.
    public enum Mode: String, Sendable, CaseIterable {
        /// A compacted copy of the leader's environment, then the log from its head.
        case snapshot
        /// The leader's identity and credentials, then its whole log from sequence 1.
        case stream
    }

    /// What `prepare` did.
    public enum Outcome: Sendable, Equatable {
        /// The directory already held a log; nothing was changed.
        case existing
        /// Seeded from a snapshot holding commits up to this sequence.
        case snapshot(head: UInt64, bytes: Int)
        /// Given the leader's identity and credentials; it will stream from sequence 1.
        case identity
    }

    /// Makes `path` ready to follow `client`'s leader. With `reseed`, an existing
    /// directory is renamed to `path.discarded-<time>` first. An existing directory
    /// whose next commit the leader no longer keeps (retention) is refused with
    /// ``ReplicationError/behindRetention(_:)``, as the stream refuses it while running:
    /// the node rejoins in one way for both (``NodeLoop``), the copy (a verified prefix
    /// of the leader's log) moved aside rather than deleted, so an operator decides
    /// when it goes, and a snapshot seeding the empty directory.
    public static func prepare(
        path: String, client: LeaderClient, mode: Mode, reseed: Bool, logger: Logger,
        progress: (@Sendable (Int, Int) -> Void)? = nil
    ) async throws -> Outcome {
        let files = FileManager.default
        if reseed, files.fileExists(atPath: path + "/data.mdb") {
            let aside = try moveAside(path, suffix: "discarded")
            logger.warning("re-seeding: the old copy was moved to \(aside)")
        } else if files.fileExists(atPath: path + "/data.mdb"), let why = await behindRetention(path: path, client: client) {
            throw ReplicationError.behindRetention(why)
        }
        guard !files.fileExists(atPath: path + "/data.mdb") else { return .existing }
        // A leader that cannot be reached yet (starting, or busy copying) is retried
        // with backoff, like the stream; anything else stops the follower.
        var delay = Duration.milliseconds(200)
        while true {
            do {
                return try await seed(path: path, client: client, mode: mode, logger: logger, progress: progress)
            } catch let error as ReplicationError where error.isTransient {
                try Task.checkCancellation()
                logger.warning("seeding: \(error); retrying in \(delay)")
                try await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(10))
            }
        }
    }

    /// One seeding attempt. Everything is prepared in `path.seeding` and renamed into
    /// place at the end, so a crash mid-way leaves no half-seeded directory behind.
    static func seed(
        path: String, client: LeaderClient, mode: Mode, logger: Logger, progress: (@Sendable (Int, Int) -> Void)?
    ) async throws -> Outcome {
        let files = FileManager.default
        let hello = try await client.hello()
        guard let identity = hello.identity else {
            throw ReplicationError.protocolViolation("the leader's hello has a malformed log ID or epoch")
        }
        let staging = path + ".seeding"
        try? files.removeItem(atPath: staging)
        try files.createDirectory(
            atPath: staging, withIntermediateDirectories: true,
            attributes: [.posixPermissions: Int(FilePermissions.directory)])
        let outcome: Outcome
        // A leader that dropped its first commits cannot stream the whole log.
        let streamable = (hello.retainedFrom ?? 1) <= 1
        if mode == .stream && !streamable {
            logger.warning("the leader keeps its log from commit \(hello.retainedFrom ?? 1) on: seeding from a snapshot instead")
        }
        switch streamable ? mode : .snapshot {
        case .stream:
            let configuration = try await client.configuration()
            try seedIdentity(path: staging, identity: identity, configuration: configuration)
            outcome = .identity
        case .snapshot:
            let bytes = try await client.downloadSnapshot(to: staging + "/snapshot", progress: progress)
            try SnapshotLayout.unpack(staging + "/snapshot", into: staging)
            let head = try check(snapshot: staging, identity: identity)
            let assets = try await fetchAssets(into: staging, from: client)
            if assets > 0 { logger.info("fetched \(assets) asset files the snapshot's records refer to") }
            outcome = .snapshot(head: head, bytes: bytes)
        }
        // An empty directory made by hand is in the way of the rename.
        if let contents = try? files.contentsOfDirectory(atPath: path) {
            guard contents.isEmpty else {
                throw ReplicationError.refused("\(path) exists and is not a Cumulus data directory; give an empty or new path")
            }
            try files.removeItem(atPath: path)
        }
        try files.moveItem(atPath: staging, toPath: path)
        logger.info("seeded \(path) from \(client.leaderURL) (log \(hello.logID), epoch \(identity.epoch)): \(outcome)")
        return outcome
    }

    /// Renames `path` to `path.<suffix>-<time>` (a free name) and returns the new name.
    public static func moveAside(_ path: String, suffix: String) throws -> String {
        let stamp = Int(Date().timeIntervalSince1970)
        var aside = "\(path).\(suffix)-\(stamp)"
        var attempt = 1
        while FileManager.default.fileExists(atPath: aside) {
            attempt += 1
            aside = "\(path).\(suffix)-\(stamp)-\(attempt)"
        }
        try FileManager.default.moveItem(atPath: path, toPath: aside)
        return aside
    }

    /// Why the copy at `path` cannot stream from `client`'s leader any more — its
    /// next commit is before the first the leader keeps — or `nil` if it can (or the
    /// leader cannot be asked now: then the stream finds out, and `serve` re-seeds).
    static func behindRetention(path: String, client: LeaderClient) async -> String? {
        guard let hello = try? await client.hello(), let first = hello.retainedFrom, first > 1,
            let identity = hello.identity
        else { return nil }
        let head: UInt64
        do {
            // The log alone, opened and closed again before the follower opens the
            // directory for good (its views are never opened before that open decides).
            let found = try LogStore.logIdentity(ofDataDirectory: path)
            // Another log altogether: the stream refuses it with its own reason.
            guard found.logID == identity.logID else { return nil }
            head = found.head
        } catch {
            return nil
        }
        guard head + 1 < first else { return nil }
        return "this copy holds commits up to \(head), and the leader keeps its log from commit \(first) on"
    }

    /// Writes `identity`, the follower mark and `configuration` into the log
    /// environment of a new data directory at `path`, in one transaction.
    public static func seedIdentity(path: String, identity: LogStore.Identity, configuration: ReplicatedConfiguration) throws {
        let environment = try LMDBEnvironment(path: DataLayout.logPath(path))
        let handles = try ReplicatedConfiguration.openTables(in: environment)
        try LogStore.seedIdentity(identity, follower: true, in: environment) { txn in
            try configuration.write(to: handles, in: txn)
        }
    }

    /// Fetches every asset file a record version of the snapshot at `path` can reach
    /// (its views count them) into its asset store; returns how many it fetched. A
    /// snapshot is LMDB's copy, which holds no files: they come over before the
    /// directory is put in place, so a seeded follower serves every asset it holds
    /// a record of from its first request.
    static func fetchAssets(into path: String, from client: LeaderClient) async throws -> Int {
        let wanted: [AssetChecksum]
        do {
            let environment = try LMDBEnvironment(path: path)
            let store = try LogStore(environment: environment)
            let views = try Views(environment: environment)
            let first = store.firstRetained
            wanted = try environment.read { try views.reachableAssets(retainedFrom: first, in: $0) }
        }
        let files = try AssetStore(dataDirectory: path)
        var fetched = 0
        for checksum in wanted where !files.contains(checksum) {
            try await ReplicaFollower.fetchAsset(checksum, from: client, into: files)
            fetched += 1
        }
        return fetched
    }

    /// Opens a downloaded snapshot and checks it holds the expected log with an
    /// intact last frame; returns its head.
    static func check(snapshot path: String, identity: LogStore.Identity) throws -> UInt64 {
        let environment = try LMDBEnvironment(path: path)
        let store = try LogStore(environment: environment)
        guard store.logID == identity.logID else {
            throw ReplicationError.diverged("the snapshot holds log \(Hex.encode(store.logID)), not \(Hex.encode(identity.logID))")
        }
        let head = store.head.sequence
        let report = try store.verifyChain(from: max(head, 1))
        guard report.isIntact else {
            throw ReplicationError.badFrame("the snapshot's log is damaged: \(report)")
        }
        try LogStore.markFollower(in: store.logEnvironment)
        return head
    }
}
