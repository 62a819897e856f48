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
    @Flag(help: "Mint and print a development API token and user token at start (leader only).") var dev = false
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

    /// `https` with --tls-cert, else `http`: what the banner's URLs say.
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
        let replicationSecret = try secret.resolve(warn: true)
        let metricsToken = try metricsToken(warn: true)
        let etcdAccess = cluster.isSet ? try cluster.access(warn: true) : .plain
        for finding in FilePermissions.looserThanPrivate(dataDirectory: data) { logger.warning("\(finding)") }
        // Read and checked once, before anything listens: a bad file stops the start.
        var tls: ServerTLS?
        if let tlsCert, let tlsKey {
            tls = try ServerTLS(certificateFile: tlsCert, keyFile: tlsKey)
            for finding in FilePermissions.looserThanPrivate(file: tlsKey) { logger.warning("\(finding)") }
        }
        var client: LeaderClient?
        if let follow, let secret = replicationSecret {
            client = LeaderClient(leaderURL: follow, secret: secret, maxAssetBytes: limits.maxAssetBytes)
        }
        // One history of the node's roles for the whole process, kept across rejoins.
        let history = NodeHistory()
        func rejoining(_ why: String) {
            history.record("rejoining", epoch: history.changes.last?.epoch ?? 0, reason: why)
        }
        // A cluster member whose log diverged from its leader's serves again, on a fresh
        // directory seeded from the leader; everything else serves once.
        while true {
            var member: ClusterMember?
            var etcd: EtcdClient?
            if cluster.isSet, let secret = replicationSecret, let keys = ClusterKeys(cluster: cluster.cluster ?? ""),
                let node = cluster.node, let advertise = cluster.advertise
            {
                let coordinator = EtcdClient(endpoints: cluster.endpoints, access: etcdAccess)
                etcd = coordinator
                member = ClusterMember(
                    client: coordinator, keys: keys,
                    configuration: LeaderElection.Configuration(node: node, url: advertise, ttl: .seconds(cluster.leaseTTL)),
                    secret: secret, maxAssetBytes: limits.maxAssetBytes, logger: logger)
            }
            do {
                try await serve(
                    client: client, member: member, replicationSecret: replicationSecret, metricsToken: metricsToken,
                    tls: tls, history: history, logger: logger)
            } catch let rejoin as MustRejoin {
                await etcd?.shutdown()
                let aside = try FollowerSeeder.moveAside(data, suffix: rejoin.cause.rawValue)
                rejoining("\(rejoin); the data directory was moved to \(aside)")
                logger.warning(
                    "cluster: \(rejoin); its data directory was moved to \(aside) (kept, not deleted); joining again, seeded from the leader")
                continue
            } catch LogError.viewsTorn(let why) where client != nil {
                // A follower's views torn by a crash of the machine, on a log that cannot
                // make them again: the directory goes aside and a snapshot seeds it anew.
                let aside = try FollowerSeeder.moveAside(data, suffix: "torn")
                rejoining("\(why); the data directory was moved to \(aside)")
                logger.warning(
                    "\(why); the data directory was moved to \(aside) (kept, not deleted); seeding again from a snapshot")
                continue
            } catch ReplicationError.behindRetention(let why) where client != nil {
                // A follower whose leader dropped the commits it needs: the old copy (a
                // verified prefix of the leader's log) goes aside, and serving starts
                // again, seeded from a snapshot.
                let aside = try FollowerSeeder.moveAside(data, suffix: "behind")
                rejoining("\(why); the data directory was moved to \(aside)")
                logger.warning(
                    "replication: \(why); the data directory was moved to \(aside) (kept, not deleted); seeding again from a snapshot")
                continue
            } catch {
                // The HTTP clients must be shut down on every path, failures included.
                await client?.shutdown()
                await etcd?.shutdown()
                if error is ExitCode || error is ValidationError { throw error }
                FileHandle.standardError.write(Data("cumulus: \(error)\n".utf8))
                throw ExitCode(3)
            }
            await client?.shutdown()
            await etcd?.shutdown()
            break
        }
        print("Cumulus stopped cleanly")
    }

    /// The metrics token from `--metrics-token-file` or the environment, or `nil`.
    private func metricsToken(warn: Bool) throws -> String? {
        try CloudKitAPI.metricsTokenSource.resolveForCommand(file: metricsTokenFile, warn: warn)
    }

    /// Seeds a follower if needed, opens the data directory and serves it until
    /// SIGINT/SIGTERM, or until replication must stop (thrown).
    private func serve(
        client: LeaderClient?, member: ClusterMember?, replicationSecret: String?, metricsToken: String?, tls: ServerTLS?,
        history: NodeHistory, logger: Logger
    ) async throws {
        let metrics = ServerMetrics()
        var writerOptions = LogWriter.Options()
        writerOptions.observer = { metrics.recordGroup($0) }
        var role = NodeRole.leader
        if let leader = client {
            role = .follower(leaderURL: leader.leaderURL)
            // Created at the first chunk, when the snapshot's size is known if the leader
            // sends it (an older one does; a current one sends its copy as it is written).
            let bar = Mutex<Progress?>(nil)
            let outcome = try await FollowerSeeder.prepare(
                path: data, client: leader, mode: FollowerSeeder.Mode(rawValue: seed) ?? .snapshot, reseed: reseed,
                logger: logger,
                progress: { done, total in
                    bar.withLock { progress in
                        if progress == nil { progress = Progress(label: "snapshot bytes", total: UInt64(max(total, 0))) }
                        progress?.update(UInt64(done))
                    }
                })
            bar.withLock { $0?.finish() }
            if outcome != .existing { logger.info("follower seeded: \(outcome)") }
        } else if readOnly {
            role = .readOnly
        }
        var environmentOptions = LMDBEnvironment.Options()
        environmentOptions.readOnly = readOnly
        let store: Container
        if let member {
            // The election decides whether an empty directory starts a log or is seeded.
            let (data, environment, writer, viewsSync) = (self.data, environmentOptions, writerOptions, viewsSync)
            store = try await member.join(path: data) { role in
                try Container(
                    path: data, environmentOptions: environment, writerOptions: writer, role: role, viewsSync: viewsSync,
                    history: history)
            }
            role = .candidate
        } else {
            store = try Container(
                path: data, environmentOptions: environmentOptions, writerOptions: writerOptions, role: role, viewsSync: viewsSync,
                catchUpObserver: { sequence in logger.info("views catching up with the log: applied through \(sequence)") },
                migrationObserver: { records in
                    logger.info("views of the layout before migrating in place: \(records) records done")
                }, history: history)
        }
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
        let auth = try AuthStore(environment: store.store.logEnvironment)
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
        if dev {
            let users = try auth.users()
            let user = try users.first ?? auth.addUser()
            let apiToken = try auth.createAPIToken(container: container, environment: .development)
            let productionToken = try auth.createAPIToken(container: container, environment: .production)
            let webToken = try auth.createWebAuthToken(for: user, container: container)
            let base = "\(scheme)://\(host):\(port)/database/1/\(container)/development"
            // Written unbuffered so the banner shows even when stdout is a pipe or a file.
            FileHandle.standardOutput.write(Data("""
                Cumulus is serving \(data) on \(scheme)://\(host):\(port)
                  container:      \(container)
                  user:           \(user)
                  ckAPIToken:     \(apiToken)
                  ckWebAuthToken: \(webToken)
                  production ckAPIToken: \(productionToken)
                  (an API token opens one environment; the first is development's)
                  try:            curl '\(base)/private/zones/list?ckAPIToken=\(apiToken)&ckWebAuthToken=\(webToken)'

                """.utf8))
        } else {
            let what = member.map { "as node \($0.election.configuration.node) of cluster \($0.election.keys.cluster)" } ?? "as \(role)"
            FileHandle.standardOutput.write(Data(
                "Cumulus is serving \(data) on \(scheme)://\(host):\(port) \(what), epoch \(store.store.epoch), head \(store.store.head.sequence)\n".utf8))
        }
        var follower: ReplicaFollower?
        var endpoints: ReplicationEndpoints?
        var replicationLeader: ReplicationLeader?
        if let secret = replicationSecret {
            if let client {
                follower = ReplicaFollower(
                    container: store, client: client, name: name ?? "\(ProcessInfo.processInfo.hostName):\(port)", logger: logger)
            }
            // A cluster member serves followers whenever it leads (the leader side checks
            // the node's role on every request).
            let leader = role == .leader || member != nil ? ReplicationLeader(container: store, logger: logger) : nil
            replicationLeader = leader
            if let leader, let policy = sync.policy {
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
                container: store, secret: secret, leader: leader, follower: follower, currentFollower: currentFollower,
                clusterView: clusterView)
        }
        var api = CloudKitAPI(
            container: store, auth: auth, metrics: metrics, logger: logger, replication: endpoints, metricsToken: metricsToken)
        api.limits = limits.apiLimits
        api.publicURL = try resolvedPublicURL()
        if api.publicURL == nil {
            logger.warning(
                "no --public-url while listening on every address: the URLs this node hands out (assets, webcourier, sign-in) are built from each request's Host header; set --public-url to the URL clients use")
        }
        // Uploads are counted over the grace an unreferenced one is kept: what they can hold of the disk.
        api.limits.uploadQuota.window = assetCollection.grace
        let app = CumulusHTTPServer.application(api: api, host: host, port: port, limits: limits.limits, tls: tls, logger: logger)
        defer {
            // The HTTP server has drained; finish queued commits, then close.
            store.close()
        }
        // One service group: SIGINT/SIGTERM, or replication stopping for good, shut the
        // whole node down gracefully (the HTTP server drains first).
        var services = [ServiceGroupConfiguration.ServiceConfiguration(service: app)]
        if let follower {
            services.append(.init(
                service: FollowerService(follower: follower), successTerminationBehavior: .gracefullyShutdownGroup,
                failureTerminationBehavior: .gracefullyShutdownGroup, serviceName: "replication"))
        }
        if let member {
            services.append(.init(
                service: ClusterService(member: member), successTerminationBehavior: .gracefullyShutdownGroup,
                failureTerminationBehavior: .gracefullyShutdownGroup, serviceName: "cluster"))
        }
        if let retainCommits, role == .leader || member != nil {
            var policy = LogRetention.Policy(keep: retainCommits)
            policy.followerGrace = .seconds(retainFollowerGrace)
            // It drops only while the node leads (a cluster member's role is checked each round).
            let retention = LogRetention(container: store, leader: replicationLeader, policy: policy, logger: logger)
            services.append(.init(
                service: RetentionService(retention: retention), successTerminationBehavior: .gracefullyShutdownGroup,
                failureTerminationBehavior: .gracefullyShutdownGroup, serviceName: "retention"))
        }
        if !readOnly {
            // Every node collects its own store, from its own views and log.
            services.append(.init(
                service: AssetCollectionService(
                    collector: AssetCollector(container: store, grace: assetCollection.grace),
                    interval: assetCollection.interval, logger: logger),
                successTerminationBehavior: .gracefullyShutdownGroup,
                failureTerminationBehavior: .gracefullyShutdownGroup, serviceName: "asset collection"))
        }
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(
            services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
    }
}

/// A follower's replication loop as a service of the node's service group.
struct FollowerService: Service {
    let follower: ReplicaFollower

    func run() async throws {
        try await cancelWhenGracefulShutdown { try await follower.run() }
    }
}

/// Log retention as a service of the node's group: it ends with the node.
struct RetentionService: Service {
    let retention: LogRetention

    func run() async throws {
        await cancelWhenGracefulShutdown { await retention.run() }
    }
}

/// Asset collection as a service of the node's group: a round every interval,
/// each logged when it deleted something.
struct AssetCollectionService: Service {
    let collector: AssetCollector
    let interval: Duration
    let logger: Logger

    func run() async throws {
        let logger = logger
        await cancelWhenGracefulShutdown {
            await collector.run(
                every: interval,
                onReport: { report in
                    guard !report.collected.isEmpty || report.abandonedUploads > 0 else { return }
                    logger.info(
                        "asset collection: deleted \(report.collected.count) unreferenced files and \(report.abandonedUploads) abandoned uploads; kept \(report.referenced) referenced, \(report.young) within the grace")
                },
                onFailure: { logger.warning("asset collection failed: \($0)") })
        }
    }
}

/// A cluster member's election and replication as a service of the node's group:
/// stopping it resigns, so another node can lead at once.
struct ClusterService: Service {
    let member: ClusterMember

    func run() async throws {
        try await cancelWhenGracefulShutdown { try await member.run() }
    }
}

/// `cumulus users add|list`.
struct UsersCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "users", abstract: "Manage users, their passwords and their web auth tokens.",
        subcommands: [Add.self, List.self, Passwd.self, SignInCode.self])

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Add a user and print a web auth token for it.")
        @OptionGroup var options: LogCommand.DataOptions
        @Option(help: "The user record name (default: a new _<32 hex>).") var name: String?
        @Option(help: "The container the web auth token signs in to (a token opens one).")
        var container = ServeCommand.developmentContainer

        func run() throws {
            let auth = try openAuth(options.data)
            let user = try auth.addUser(name: name)
            print("user:           \(user)")
            print("ckWebAuthToken: \(try auth.createWebAuthToken(for: user, container: container))")
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List users.")
        @OptionGroup var options: LogCommand.DataOptions
        func run() throws { for user in try openAuth(options.data).users() { print(user) } }
    }

    struct Passwd: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Set the password a user signs in with on the sign-in page (read from a file or standard input, never the command line).")
        @OptionGroup var options: LogCommand.DataOptions
        @Option(help: "The user record name.") var user: String
        @Option(help: "A file whose first line is the password (default: standard input).") var passwordFile: String?
        @Flag(help: "Remove the user's password instead: they can then sign in only with a sign-in code.") var remove = false

        func run() throws {
            let auth = try openAuth(options.data)
            if remove {
                print(try auth.removePassword(for: user) ? "password removed" : "\(user) had no password")
                return
            }
            let text: String
            if let passwordFile {
                text = try String(contentsOfFile: passwordFile, encoding: .utf8)
            } else {
                text = readLine(strippingNewline: true) ?? ""
            }
            let password = text.split(separator: "\n", omittingEmptySubsequences: false).first.map(String.init) ?? ""
            guard password.count >= 8 else { throw ValidationError("a password is at least 8 characters") }
            try auth.setPassword(password, for: user)
            print("password set for \(user)")
        }
    }

    struct SignInCode: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "signin-code",
            abstract: "Mint a one-time code that signs a user in on the sign-in page, within 15 minutes.")
        @OptionGroup var options: LogCommand.DataOptions
        @Option(help: "The user record name.") var user: String
        @Option(help: "The container the code signs in to.") var container = ServeCommand.developmentContainer

        func run() throws {
            let code = try openAuth(options.data).createSignInLink(for: user, container: container)
            print("sign-in code: \(code)  (once, within 15 minutes, for \(user) in \(container))")
        }
    }
}

/// `cumulus tokens create|revoke`.
struct TokensCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tokens", abstract: "Mint and revoke API and web auth tokens.", subcommands: [Create.self, Revoke.self])

    struct Create: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Mint an API token for a container, or a web auth token for a user.")
        @OptionGroup var options: LogCommand.DataOptions
        @Option(help: "Mint an API token for this container; with --user, the container the web auth token signs in to.")
        var container: String?
        @Option(help: "The environment the API token opens: development or production (a token opens one).")
        var environment = "development"
        @Option(help: "Mint a web auth token for this user.") var user: String?
        @Option(
            name: .customLong("origin"),
            help: "A web origin (https://app.example.com) whose pages may use the API token from a browser (CORS); repeat for more. None: no page of another origin may.")
        var origins: [String] = []

        func run() throws {
            let auth = try openAuth(options.data)
            guard let environment = DatabaseID.Environment(name: environment) else {
                throw ValidationError("--environment is development or production")
            }
            if user != nil && !origins.isEmpty {
                throw ValidationError("--origin belongs to an API token (--container without --user)")
            }
            if let user {
                // A web auth token belongs to one container: --user alone mints one for the
                // development container, as `users add` does.
                let container = container ?? ServeCommand.developmentContainer
                print("ckWebAuthToken: \(try auth.createWebAuthToken(for: user, container: container))")
            } else if let container {
                print("ckAPIToken: \(try auth.createAPIToken(container: container, environment: environment, origins: origins))")
            } else {
                throw ValidationError("give --container (an API token) or --user [--container] (a web auth token)")
            }
        }
    }

    struct Revoke: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke an API or web auth token.")
        @OptionGroup var options: LogCommand.DataOptions
        @Argument(help: "The token.") var token: String

        func run() throws {
            let auth = try openAuth(options.data)
            let revoked = try auth.revokeAPIToken(token) || auth.revokeWebAuthToken(token)
            print(revoked ? "revoked" : "no such token")
            if !revoked { throw ExitCode(1) }
        }
    }
}

/// Opens the auth table of a data directory (creating the directory if needed).
func openAuth(_ path: String) throws -> AuthStore {
    let container = try Container(path: path)
    return try AuthStore(environment: container.store.logEnvironment)
}

/// `cumulus keys add`: register a server-to-server public key.
struct KeysCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys", abstract: "Manage server-to-server keys (ECDSA P-256).", subcommands: [Add.self])

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register a P-256 public key (PEM) for a container; print its key ID.")
        @OptionGroup var options: LogCommand.DataOptions
        @Option(help: "The container the key opens (its public database).") var container: String
        @Option(help: "A file holding the public key in PEM form.") var publicKey: String

        func run() throws {
            let pem = try String(contentsOfFile: publicKey, encoding: .utf8)
            let (keyID, user) = try openAuth(options.data).addServerKey(container: container, publicKeyPEM: pem)
            print("X-Apple-CloudKit-Request-KeyID: \(keyID)")
            print("acts as user:                   \(user)")
        }
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
