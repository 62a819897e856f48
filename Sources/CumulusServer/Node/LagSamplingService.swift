import CumulusReplication
import ServiceLifecycle

/// Samples each follower's lag into the metrics timeline every interval, for the
/// console's lag chart: a follower reports on its own schedule, so the chart is drawn
/// from what the leader knew at each point, as `/replication/status` would have said.
struct LagSamplingService: Service {
    let replication: ReplicationEndpoints
    let timeline: MetricsTimeline

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                var lags: [String: MetricsTimeline.FollowerLag] = [:]
                for follower in replication.status().followers {
                    lags[follower.name] = MetricsTimeline.FollowerLag(
                        commits: follower.lagCommits, milliseconds: follower.lagMilliseconds)
                }
                timeline.sample(followers: lags)
                try? await Task.sleep(for: MetricsTimeline.interval)
            }
        }
    }
}
