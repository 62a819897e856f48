import ArgumentParser
import CumulusLog
import CumulusReplication
import CumulusViews
import CumulusStorage
import Foundation

/// `cumulus status --url URL`: a node's role, identity, position and lag.
struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "Print a running node's role, log ID, epoch, head and replication lag.")

    @Option(help: "The node's URL, e.g. http://127.0.0.1:8765.") var url: String
    @OptionGroup var secret: ReplicationSecretOptions
    @Flag(help: "Print the status as JSON.") var json = false

    /// Role changes printed (JSON carries all the node keeps).
    static let historyLines = 10

    func run() async throws {
        guard let replicationSecret = try secret.resolve(warn: true) else {
            throw ValidationError(
                "give the node's replication secret: --replication-secret-file or \(ReplicationSecret.environmentVariable)")
        }
        let client = LeaderClient(leaderURL: url, secret: replicationSecret)
        let status: ReplicationStatus
        do {
            status = try await client.status()
        } catch {
            await client.shutdown()
            FileHandle.standardError.write(Data("cumulus: cannot read the status of \(url): \(error)\n".utf8))
            throw ExitCode(1)
        }
        await client.shutdown()
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(status), as: UTF8.self))
            return
        }
        print("role:      \(status.role)\(status.supersededBy.map { " (superseded by epoch \($0); takes no writes)" } ?? "")")
        print("log ID:    \(status.logID)")
        print("epoch:     \(status.epoch)")
        print("head:      \(status.head)")
        if let cluster = status.cluster {
            print("cluster:   \(cluster.name), as node \(cluster.node)")
            print("lease:     \(cluster.leader.map { "held by \($0)" } ?? "held by nobody this node knows of (an election is under way)")")
        }
        if let following = status.following {
            print("leader:    \(following.leaderURL) (\(following.state)\(following.problem.map { ": \($0)" } ?? ""))")
            print("leader at: \(following.leaderHead)")
            print("lag:       \(following.lagCommits) commits, \(following.lagMilliseconds) ms")
        }
        if !status.followers.isEmpty {
            print("followers:")
            for follower in status.followers {
                print("  \(follower.name): applied \(follower.applied), lag \(follower.lagCommits) commits / \(follower.lagMilliseconds) ms, streams \(follower.openStreams), reported \(follower.sinceReportMilliseconds) ms ago")
            }
        }
        if let history = status.history, !history.isEmpty {
            print("history (latest \(min(history.count, Self.historyLines)) of \(history.count) role changes):")
            for change in history.suffix(Self.historyLines) { print("  \(change.line)") }
        }
    }
}

/// `cumulus promote --data DIR`: makes a stopped follower a leader in the next epoch.
struct PromoteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "promote",
        abstract: "Make a stopped follower's data directory a leader's, in the next epoch.",
        discussion: """
            Run it on a STOPPED follower, after stopping the old leader (Docs/OPERATIONS.md, "Handing over").
            Then start it with `cumulus serve --data DIR --replication-secret-file FILE` and point the
            other followers at it. Nodes and tokens that have seen the new epoch refuse the old leader.
            """)

    @Option(help: "The follower's data directory.") var data: String

    func run() throws {
        let store = try openLog(data, readOnly: false)
        let before = store.epoch
        // The epoch's first commit passes through the views like any other.
        let views = try Views(environment: store.environment)
        let epoch = try store.promote(applying: views.apply)
        print("promoted \(data): epoch \(before) → \(epoch), head \(store.head)")
        print("start it with: cumulus serve --data \(data) --replication-secret-file <file>")
    }
}
