import CumulusEngine
import CumulusLog
import CumulusModel
import CumulusReplication
import CumulusStorage
import Foundation
import Logging
import ServiceLifecycle

/// A node serving a data directory: the CloudKit API over HTTP, replication to and
/// from other nodes, and its background work, as `cumulus serve` starts it.
///
/// **Its life.** ``run()`` serves until SIGINT or SIGTERM, as ``NodeLoop`` drives it:
/// when serving ends with a failure the node's ``NodeStateMachine`` says calls for a
/// rejoin, the directory is moved aside and the node serves again, seeded from the
/// leader; any other failure is thrown. **One serving** seeds a follower if needed,
/// opens the directory (a cluster member through ``ClusterMember/join(path:open:)``),
/// and runs one service group: the HTTP server, the replication stream or the
/// cluster's election, retention and asset collection. Stopping any of them stops the
/// group, the HTTP server draining first; the container closes last.
public struct ServedNode: Sendable {
    /// Everything a node is started with (`cumulus serve`'s options, resolved).
    public struct Configuration: Sendable {
        /// The data directory.
        public var data: String
        /// The address listened on.
        public var host: String
        /// The port listened on.
        public var port: Int
        /// The base URL clients reach the node at, if not the address listened on
        /// (``CloudKitAPI/publicURL``).
        public var publicURL: String?
        /// The API over TLS, or `nil` for plain HTTP.
        public var tls: ServerTLS?
        /// How the node was started: its fixed role, or a cluster's member.
        public var mode: NodeStateMachine.Mode = .leader
        /// The secret nodes prove to each other; without it the node neither serves
        /// followers nor follows.
        public var replicationSecret: String?
        /// How a cluster member reaches etcd and names itself, with ``mode`` `.cluster`.
        public var cluster: ClusterSettings?
        /// A follower's first seed: a snapshot or the whole log.
        public var seed: FollowerSeeder.Mode = .snapshot
        /// A follower's existing directory is moved aside and seeded anew.
        public var reseed = false
        /// The name a follower reports to its leader.
        public var followerName: String?
        /// Hears a follower's seeding: bytes received and the total if known; called
        /// once more with `nil` when it ends.
        public var seedProgress: (@Sendable (_ progress: (done: Int, total: Int)?) -> Void)?
        /// Semi-synchronous commit, or `nil`.
        public var sync: SyncReplication.Policy?
        /// What a leader keeps of its log, or `nil` for all of it.
        public var retention: LogRetention.Policy?
        /// When the views are made durable.
        public var viewsSync = ViewsSyncer.Policy()
        /// Connection and request limits.
        public var serverLimits = ServerLimits()
        /// What one request may ask for, and the rate limits.
        public var apiLimits = APILimits()
        /// The largest asset file a follower fetches from its leader.
        public var maxAssetBytes = Container.defaultMaxAssetBytes
        /// How often asset collection runs.
        public var assetInterval: Duration = .seconds(600)
        /// How long an unreferenced asset file is kept.
        public var assetGrace = AssetCollector.defaultGrace
        /// The token that opens `/metrics`, or `nil`.
        public var metricsToken: String?
        /// With `--dev`: the container to mint development credentials for, printed
        /// with the banner.
        public var developmentContainer: String?
        /// Whether the node serves the web console at `/console`.
        public var console = false

        /// A leader serving `data` on `host:port`, with every default.
        public init(data: String, host: String, port: Int) {
            self.data = data
            self.host = host
            self.port = port
        }

        /// `https` with TLS, else `http`: what the banner's URLs say.
        var scheme: String { tls == nil ? "http" : "https" }
        /// Whether the directory is served read-only.
        var readOnly: Bool { mode == .readOnly }
    }

    /// Where a cluster member finds etcd and who it is in the cluster.
    public struct ClusterSettings: Sendable {
        /// etcd's endpoints.
        public var endpoints: [String]
        /// How to reach them (TLS, credentials).
        public var access: EtcdAccess
        /// The cluster's keys.
        public var keys: ClusterKeys
        /// The node's name, URL and lease.
        public var election: LeaderElection.Configuration

        /// Settings.
        public init(endpoints: [String], access: EtcdAccess, keys: ClusterKeys, election: LeaderElection.Configuration) {
            self.endpoints = endpoints
            self.access = access
            self.keys = keys
            self.election = election
        }
    }

    /// How the node is started.
    public let configuration: Configuration
    let logger: Logger

    /// A node started as `configuration` says, logging to `logger`.
    public init(_ configuration: Configuration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    /// Serves until SIGINT/SIGTERM; throws the failure that stopped it otherwise.
    public func run() async throws {
        let configuration = self.configuration
        var client: LeaderClient?
        if case .follower(let url) = configuration.mode, let secret = configuration.replicationSecret {
            client = LeaderClient(leaderURL: url, secret: secret, maxAssetBytes: configuration.maxAssetBytes)
        }
        // One history of the node's roles for the whole process, kept across rejoins.
        let history = NodeHistory()
        do {
            try await NodeLoop.run(data: configuration.data, mode: configuration.mode, history: history, logger: logger) {
                // A cluster member's election and etcd client last one serving: a rejoin
                // starts both anew.
                var member: ClusterMember?
                var etcd: EtcdClient?
                if let cluster = configuration.cluster, let secret = configuration.replicationSecret {
                    let coordinator = EtcdClient(endpoints: cluster.endpoints, access: cluster.access)
                    etcd = coordinator
                    member = ClusterMember(
                        client: coordinator, keys: cluster.keys, configuration: cluster.election, secret: secret,
                        maxAssetBytes: configuration.maxAssetBytes, logger: logger)
                }
                do {
                    try await serveOnce(client: client, member: member, history: history)
                } catch {
                    await etcd?.shutdown()
                    throw error
                }
                await etcd?.shutdown()
            }
        } catch {
            // The HTTP clients are shut down on every path, failures included.
            await client?.shutdown()
            throw error
        }
        await client?.shutdown()
    }

    /// Seeds a follower if needed, opens the data directory and serves it until
    /// SIGINT/SIGTERM, or until replication must stop (thrown).
    private func serveOnce(client: LeaderClient?, member: ClusterMember?, history: NodeHistory) async throws {
        let configuration = self.configuration
        let logger = self.logger
        let metrics = ServerMetrics()
        var writerOptions = LogWriter.Options()
        writerOptions.observer = { metrics.recordGroup($0) }
        // A cluster member's role is the election's, from the candidate it opens as.
        let role: NodeRole =
            switch configuration.mode {
            case .leader: .leader
            case .follower(let leaderURL): .follower(leaderURL: leaderURL)
            case .readOnly: .readOnly
            case .cluster: .candidate
            }
        if let leader = client {
            let outcome = try await FollowerSeeder.prepare(
                path: configuration.data, client: leader, mode: configuration.seed, reseed: configuration.reseed,
                logger: logger, progress: { done, total in configuration.seedProgress?((done, total)) })
            configuration.seedProgress?(nil)
            if outcome != .existing { logger.info("follower seeded: \(outcome)") }
        }
        var environmentOptions = LMDBEnvironment.Options()
        environmentOptions.readOnly = configuration.readOnly
        let node: NodeState
        if let member {
            // The election decides whether an empty directory starts a log or is seeded.
            let (data, environment, writer, viewsSync) =
                (configuration.data, environmentOptions, writerOptions, configuration.viewsSync)
            node = try await member.join(path: data) { refusal in
                try Container(
                    path: data, environmentOptions: environment, writerOptions: writer, refusingWrites: refusal,
                    viewsSync: viewsSync, history: history)
            }
        } else {
            let container = try Container(
                path: configuration.data, environmentOptions: environmentOptions, writerOptions: writerOptions,
                refusingWrites: NodeState.refusal(for: role), viewsSync: configuration.viewsSync,
                catchUpObserver: { sequence in logger.info("views catching up with the log: applied through \(sequence)") },
                migrationObserver: { records in
                    logger.info("views of the layout before migrating in place: \(records) records done")
                }, history: history)
            node = NodeState(container: container, role: role, because: "opened \(configuration.data)")
        }
        let store = node.container
        // The HTTP server has drained by the time this runs; queued commits finish, then it closes.
        defer { store.close() }
        reportOpenedViews(store)
        let auth = try AuthStore(environment: store.store.logEnvironment)
        warnOfUnboundTokens(auth)
        try printBanner(store: store, auth: auth, role: node.role, member: member)
        var follower: ReplicaFollower?
        var endpoints: ReplicationEndpoints?
        var replicationLeader: ReplicationLeader?
        if let secret = configuration.replicationSecret {
            if let client {
                let name = configuration.followerName ?? "\(ProcessInfo.processInfo.hostName):\(configuration.port)"
                follower = ReplicaFollower(container: store, client: client, name: name, logger: logger, node: node)
            }
            // A cluster member serves followers whenever it leads (the leader side checks
            // the node's role on every request).
            let leader = role == .leader || member != nil ? ReplicationLeader(node: node, logger: logger) : nil
            replicationLeader = leader
            if let leader, let policy = configuration.sync {
                leader.requireReplicas(policy)
                logger.info(
                    "semi-synchronous commit: \(policy.replicas) follower(s) confirm each write (timeout \(policy.timeout), then \(policy.fallback.rawValue))")
            }
            var currentFollower: (@Sendable () -> ReplicaFollower?)?
            var clusterView: (@Sendable () -> ReplicationStatus.ClusterView)?
            if let member {
                currentFollower = { member.follower }
                clusterView = { member.view }
            }
            endpoints = ReplicationEndpoints(
                node: node, secret: secret, leader: leader, follower: follower, currentFollower: currentFollower,
                clusterView: clusterView)
        }
        var api = CloudKitAPI(
            container: store, auth: auth, metrics: metrics, logger: logger, replication: endpoints,
            metricsToken: configuration.metricsToken, node: node)
        api.limits = configuration.apiLimits
        api.publicURL = configuration.publicURL
        if api.publicURL == nil {
            logger.warning(
                "no --public-url while listening on every address: the URLs this node hands out (assets, webcourier, sign-in) are built from each request's Host header; set --public-url to the URL clients use")
        }
        // Uploads are counted over the grace an unreferenced one is kept: what they can hold of the disk.
        api.limits.uploadQuota.window = configuration.assetGrace
        if configuration.console {
            api.consoleSessions = ConsoleSessions()
            api.consoleTimeTravel = ConsoleTimeTravel(source: api.container)
            api.consoleJobs = ConsoleJobs(dataPath: api.container.path)
            let base = configuration.publicURL ?? "\(configuration.scheme)://\(configuration.host):\(configuration.port)"
            logger.info("the web console is served at \(base)/console (sign in as a user with a password; operators see the node)")
        }
        let app = CumulusHTTPServer.application(
            api: api, host: configuration.host, port: configuration.port, limits: configuration.serverLimits,
            tls: configuration.tls, logger: logger)
        // One service group: SIGINT/SIGTERM, or replication stopping for good, shut the
        // whole node down gracefully (the HTTP server drains first).
        var services = [ServiceGroupConfiguration.ServiceConfiguration(service: app)]
        func add(_ service: any Service, _ name: String) {
            services.append(.init(
                service: service, successTerminationBehavior: .gracefullyShutdownGroup,
                failureTerminationBehavior: .gracefullyShutdownGroup, serviceName: name))
        }
        if let follower { add(FollowerService(follower: follower), "replication") }
        if let member { add(ClusterService(member: member), "cluster") }
        if configuration.console, let endpoints = api.replication {
            add(LagSamplingService(replication: endpoints, timeline: metrics.timeline), "lag sampling")
        }
        if let policy = configuration.retention, role == .leader || member != nil {
            // It drops only while the node leads (a cluster member's role is checked each round).
            add(
                RetentionService(
                    retention: LogRetention(node: node, leader: replicationLeader, policy: policy, logger: logger)),
                "retention")
        }
        if !configuration.readOnly {
            // Every node collects its own store, from its own views and log.
            add(
                AssetCollectionService(
                    collector: AssetCollector(container: store, grace: configuration.assetGrace),
                    interval: configuration.assetInterval, logger: logger),
                "asset collection")
        }
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(
            services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
    }

    /// Says how the views were found, if a crash of the machine may have torn them.
    private func reportOpenedViews(_ store: Container) {
        switch store.openedViews {
        case .kept: break
        case .remade:
            logger.warning("the views may have been torn by a crash of the machine: they were made again from the log")
        case .restored(let sequence):
            logger.warning("""
                the views may have been torn by a crash of the machine: they were restored from the views snapshot \
                at commit \(sequence) and caught up from the log
                """)
        }
    }

    /// Warns of tokens minted before tokens were bound to an environment or a container.
    private func warnOfUnboundTokens(_ auth: AuthStore) {
        if let unbound = try? auth.unboundAPITokenCount(), unbound > 0 {
            logger.warning("""
                \(unbound) API token(s) open both environments (minted before tokens were bound to one); \
                mint one per environment with `cumulus tokens create --container C --environment E` \
                and revoke the old ones
                """)
        }
        if let unbound = try? auth.unboundWebAuthTokenCount(), unbound > 0 {
            logger.warning("""
                \(unbound) web auth token(s) were minted before tokens were bound to a container and sign in no one; \
                mint new ones with `cumulus tokens create --user U --container C`
                """)
        }
    }

    /// The line that says the node serves, or with `--dev` the credentials it minted.
    private func printBanner(store: Container, auth: AuthStore, role: NodeRole, member: ClusterMember?) throws {
        let (data, scheme, host, port) = (configuration.data, configuration.scheme, configuration.host, configuration.port)
        // Written unbuffered so the banner shows even when stdout is a pipe or a file.
        if let container = configuration.developmentContainer {
            // The development user is an operator: the console shows them the node too.
            let user = try auth.addUser(name: try auth.users().first, operator: true)
            let apiToken = try auth.createAPIToken(container: container, environment: .development)
            let productionToken = try auth.createAPIToken(container: container, environment: .production)
            let webToken = try auth.createWebAuthToken(for: user, container: container)
            let base = "\(scheme)://\(host):\(port)/database/1/\(container)/development"
            FileHandle.standardOutput.write(Data("""
                Cumulus is serving \(data) on \(scheme)://\(host):\(port)
                  container:      \(container)
                  user:           \(user)
                  ckAPIToken:     \(apiToken)
                  ckWebAuthToken: \(webToken)
                  production ckAPIToken: \(productionToken)
                  (an API token opens one environment; the first is development's)
                  try:            curl '\(base)/private/zones/list?ckAPIToken=\(apiToken)&ckWebAuthToken=\(webToken)'
                  console:        \(scheme)://\(host):\(port)/console  (first: cumulus users passwd --data \(data) --user \(user))

                """.utf8))
        } else {
            let what =
                member.map { "as node \($0.election.configuration.node) of cluster \($0.election.keys.cluster)" } ?? "as \(role)"
            FileHandle.standardOutput.write(Data(
                "Cumulus is serving \(data) on \(scheme)://\(host):\(port) \(what), epoch \(store.store.epoch), head \(store.store.head.sequence)\n".utf8))
        }
    }
}
