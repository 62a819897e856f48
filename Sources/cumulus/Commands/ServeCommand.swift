import ArgumentParser
import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusReplication
import CumulusServer
import CumulusStorage
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// `cumulus serve`: the CloudKit Web Services–compatible HTTP API, as a leader, a
/// follower of one (`--follow`), or over a read-only directory (`--read-only`).
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve", abstract: "Serve the CloudKit Web Services–compatible HTTP API.",
        discussion: """
            A leader takes writes. Given the replication secret (--replication-secret-file, or the
            CUMULUS_REPLICATION_SECRET environment variable) it also serves followers.
            A follower (--follow URL, with the same secret) streams the leader's log, serves reads and
            refuses writes with NOT_LEADER naming the leader. A new follower is seeded from a snapshot.
            The follower exits with status 3 if replication must stop (a damaged frame, or diverged
            history). It exits with status 3 for a leader in an older epoch too.
            With --etcd, the node joins a cluster instead: etcd elects its leader, the others follow
            it, and when the leader is lost another takes over (Docs/OPERATIONS.md, "A cluster").
            With --retain-commits N, a leader drops commits older than its newest N that no follower
            needs; a follower behind what it keeps re-seeds from a snapshot by itself. The default keeps
            the whole log (audit exports and time travel reach only what is kept).
            """)

    @Option(help: "The data directory (created if missing).") var data = "./cumulus-data"
    @Option(help: "The address to listen on.") var host = "127.0.0.1"
    @Option(help: "The port to listen on.") var port = 8765
    @Option(
        help: """
            The base URL clients reach this server at (e.g. https://cloud.example.com), for the absolute URLs it hands \
            out (asset URLs, a webcourierURL, the sign-in page). Default: http(s)://HOST:PORT as listened on; on every \
            address (0.0.0.0), each request's Host header, with a warning.
            """)
    var publicURL: String?
    /// The container `--dev` mints credentials for unless told otherwise.
    static let developmentContainer = "iCloud.com.example.cumulus"

    @Option(help: "The container the development credentials open.") var container = ServeCommand.developmentContainer
    @Flag(help: "Mint and print a development API token and user token at start (leader only); also serves the console.")
    var dev = false
    @Flag(
        help: "Serve the web console at /console (on with --dev): users sign in with a password (`cumulus users passwd`); operators (`cumulus users add --operator`) also see the node.")
    var console = false
    @Option(help: "Follow the leader at this URL (e.g. http://10.0.0.1:8765) instead of taking writes.")
    var follow: String?
    @OptionGroup var secret: ReplicationSecretOptions
    @OptionGroup(title: "Cluster") var cluster: ClusterOptions
    @OptionGroup(title: "Semi-synchronous commit") var sync: SyncOptions
    @OptionGroup(title: "Limits") var limits: ServerLimitOptions
    @Option(
        help: """
            A file holding the token that opens /metrics and the detail of /healthz (sent as \
            Authorization: Bearer TOKEN). Or set \(CloudKitAPI.metricsTokenSource.environmentVariable). Without one, \
            /metrics is not served \
            and /healthz answers liveness alone.
            """)
    var metricsTokenFile: String?
    @Option(help: "How a new follower starts: snapshot (a copy of the leader, then its log) or stream (the whole log).")
    var seed: String = FollowerSeeder.Mode.snapshot.rawValue
    @Flag(help: "Follower: move the existing data directory aside and seed anew from the leader.") var reseed = false
    @Option(help: "Follower: the name it reports to its leader (default: host name and port).") var name: String?
    @Flag(help: "Serve the data directory read-only (for example a `cumulus replay` output); writes are refused.")
    var readOnly = false
    @Option(
        help: "Leader: keep only the newest N commits of the log (and what a follower still needs), dropping older ones in the background. Default: keep everything.")
    var retainCommits: UInt64?
    @Option(
        help: "With --retain-commits: seconds a follower that stopped reporting still holds back the commits it needs.")
    var retainFollowerGrace = 600
    @Option(
        help: "Milliseconds between views syncs while commits are made: the views are committed without fsync, and a crash of the machine makes them again from the log unless nothing was committed since the last sync (Docs/OPERATIONS.md).")
    var viewsSyncMs = 5_000
    @Option(help: "Most commits between views syncs.") var viewsSyncCommits = 100_000
    @OptionGroup(title: "Assets") var assetCollection: AssetCollectionOptions

    /// When views syncs happen, from `--views-sync-ms` and `--views-sync-commits`.
    var viewsSync: ViewsSyncer.Policy {
        ViewsSyncer.Policy(interval: .milliseconds(max(viewsSyncMs, 1)), commits: max(viewsSyncCommits, 1))
    }
    @Option(help: "Serve the API over TLS with this PEM certificate chain (the server's certificate first); needs --tls-key.")
    var tlsCert: String?
    @Option(help: "The PEM private key of --tls-cert, unencrypted (keep it mode 0600).") var tlsKey: String?

    /// `https` with --tls-cert, else `http`: what the default public URL says.
    var scheme: String { tlsCert == nil ? "http" : "https" }

    func validate() throws {
        guard (tlsCert == nil) == (tlsKey == nil) else { throw ValidationError("--tls-cert and --tls-key go together") }
        _ = try resolvedPublicURL()
        let replicationSecret = try secret.resolve(warn: false)
        _ = try metricsToken(warn: false)
        if follow != nil && replicationSecret == nil {
            throw ValidationError(
                "--follow needs the replication secret: --replication-secret-file or \(ReplicationSecret.environmentVariable)")
        }
        if follow != nil && readOnly { throw ValidationError("--follow and --read-only do not go together") }
        if dev && (follow != nil || readOnly) {
            throw ValidationError("--dev mints credentials, which only a leader can; mint them on the leader")
        }
        if FollowerSeeder.Mode(rawValue: seed) == nil { throw ValidationError("--seed is snapshot or stream") }
        if let retainCommits {
            if retainCommits < 1 { throw ValidationError("--retain-commits keeps at least 1 commit") }
            if follow != nil || readOnly {
                throw ValidationError("--retain-commits is for a leader (or a cluster member), not --follow or --read-only")
            }
        }
        if retainFollowerGrace < 0 { throw ValidationError("--retain-follower-grace is a number of seconds, 0 or more") }
        if sync.syncReplicas > 0 {
            if replicationSecret == nil {
                throw ValidationError(
                    "--sync-replicas needs followers, and they the replication secret: --replication-secret-file or \(ReplicationSecret.environmentVariable)")
            }
            if follow != nil || readOnly {
                throw ValidationError("--sync-replicas is for a leader (or a cluster member), not --follow or --read-only")
            }
        }
        if cluster.isSet {
            if replicationSecret == nil {
                throw ValidationError(
                    "--etcd needs the replication secret: --replication-secret-file or \(ReplicationSecret.environmentVariable)")
            }
            if follow != nil || readOnly || reseed {
                throw ValidationError("--etcd decides who leads and whom to follow: it does not go with --follow, --read-only or --reseed")
            }
        }
    }

    func run() async throws {
        var logger = Logger(label: "cumulus")
        logger.logLevel = .info
        // A bad option or file is reported as ArgumentParser reports errors; a failure
        // while serving exits with status 3.
        let node = ServedNode(try configuration(logger), logger: logger)
        do {
            try await node.run()
        } catch {
            if error is ExitCode || error is ValidationError { throw error }
            FileHandle.standardError.write(Data("cumulus: \(error)\n".utf8))
            throw ExitCode(3)
        }
        print("Cumulus stopped cleanly")
    }

    /// The node these options describe, with every file they name read and checked
    /// before anything listens (a bad one stops the start), and a warning for each
    /// secret file others can read.
    private func configuration(_ logger: Logger) throws -> ServedNode.Configuration {
        var node = ServedNode.Configuration(data: data, host: host, port: port)
        for finding in FilePermissions.looserThanPrivate(dataDirectory: data) { logger.warning("\(finding)") }
        if let tlsCert, let tlsKey {
            node.tls = try ServerTLS(certificateFile: tlsCert, keyFile: tlsKey)
            for finding in FilePermissions.looserThanPrivate(file: tlsKey) { logger.warning("\(finding)") }
        }
        node.publicURL = try resolvedPublicURL()
        node.replicationSecret = try secret.resolve(warn: true)
        node.metricsToken = try metricsToken(warn: true)
        if cluster.isSet {
            node.mode = .cluster
            if let keys = ClusterKeys(cluster: cluster.cluster ?? ""), let name = cluster.node, let advertise = cluster.advertise {
                node.cluster = ServedNode.ClusterSettings(
                    endpoints: cluster.endpoints, access: try cluster.access(warn: true), keys: keys,
                    election: LeaderElection.Configuration(node: name, url: advertise, ttl: .seconds(cluster.leaseTTL)))
            }
        } else if let follow {
            node.mode = .follower(leaderURL: follow)
        } else if readOnly {
            node.mode = .readOnly
        }
        node.seed = FollowerSeeder.Mode(rawValue: seed) ?? .snapshot
        node.reseed = reseed
        node.followerName = name
        // Created at the first chunk, when the snapshot's size is known if the leader
        // sends it (an older one does; a current one sends its copy as it is written).
        let bar = Mutex<Progress?>(nil)
        node.seedProgress = { progress in
            bar.withLock { bar in
                guard let (done, total) = progress else {
                    bar?.finish()
                    bar = nil
                    return
                }
                if bar == nil { bar = Progress(label: "snapshot bytes", total: UInt64(max(total, 0))) }
                bar?.update(UInt64(done))
            }
        }
        node.sync = sync.policy
        if let retainCommits {
            var policy = LogRetention.Policy(keep: retainCommits)
            policy.followerGrace = .seconds(retainFollowerGrace)
            node.retention = policy
        }
        node.viewsSync = viewsSync
        node.serverLimits = limits.limits
        node.apiLimits = limits.apiLimits
        node.maxAssetBytes = limits.maxAssetBytes
        node.assetInterval = assetCollection.interval
        node.assetGrace = assetCollection.grace
        if dev { node.developmentContainer = container }
        node.console = console || dev
        return node
    }

    /// The metrics token from `--metrics-token-file` or the environment, or `nil`.
    private func metricsToken(warn: Bool) throws -> String? {
        try CloudKitAPI.metricsTokenSource.resolveForCommand(file: metricsTokenFile, warn: warn)
    }
}

extension ServeCommand {
    /// `--public-url` without a trailing slash, or the address listened on when that is
    /// one address (`nil` on every address: no URL reaches this node for every client).
    /// An `http` or `https` URL naming a host and nothing after its path.
    func resolvedPublicURL() throws -> String? {
        guard let given = publicURL else {
            guard host != "0.0.0.0", host != "::" else { return nil }
            return "\(scheme)://\(host.contains(":") ? "[\(host)]" : host):\(port)"
        }
        let trimmed = given.hasSuffix("/") ? String(given.dropLast()) : given
        guard let url = URL(string: trimmed), let scheme = url.scheme, scheme == "http" || scheme == "https",
            url.host?.isEmpty == false, url.query == nil, url.fragment == nil
        else {
            throw ValidationError(
                "--public-url must be an http or https URL with a host and no query, such as https://cloud.example.com")
        }
        return trimmed
    }
}
