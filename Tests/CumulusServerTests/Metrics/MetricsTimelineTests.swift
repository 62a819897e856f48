@testable import CumulusServer
import Foundation
import HTTPTypes
import Synchronization
import Testing

/// The metrics timeline behind the console's charts: points per interval, percentiles
/// from the histogram's bounds, the oldest dropped past the limit; and the console's
/// endpoint serving it to operators.
@Suite("Metrics timeline")
struct MetricsTimelineTests {
    /// A clock a test moves.
    final class Clock: Sendable {
        let now = Mutex<Int64>(1_000_000)
        func advance(by milliseconds: Int64) { now.withLock { $0 += milliseconds } }
    }

    @Test("requests, errors, latency percentiles, groups and lags fall in the interval they happened in")
    func points() {
        let clock = Clock()
        let timeline = MetricsTimeline(clock: { clock.now.withLock { $0 } })
        for _ in 0..<98 { timeline.request(took: .microseconds(300), status: 200) }
        timeline.request(took: .milliseconds(40), status: 200)
        timeline.request(took: .milliseconds(900), status: 503)
        timeline.group(commits: 3, commit: .milliseconds(2))
        timeline.group(commits: 5, commit: .milliseconds(6))
        timeline.sample(followers: ["f1": .init(commits: 4, milliseconds: 20)])
        clock.advance(by: MetricsTimeline.interval.milliseconds)
        timeline.request(took: .milliseconds(3), status: 404)

        let points = timeline.points()
        #expect(points.count == 2)
        let first = points[0]
        #expect(first.requests == 100 && first.errors == 1)
        #expect(first.p50 == 0.5, "300 µs falls under the 0.5 ms bound")
        #expect(first.p99 == 50, "the 99th of 100 is the 40 ms one, under the 50 ms bound")
        #expect(first.groups == 2 && first.commits == 8 && first.commitMean == 4 && first.commitMax == 6)
        #expect(first.followers["f1"] == .init(commits: 4, milliseconds: 20))
        #expect(points[1].requests == 1 && points[1].errors == 0 && points[1].p50 == 5 && points[1].groups == 0)
        #expect(points[1].commitMean == nil && points[1].start - first.start == MetricsTimeline.interval.milliseconds)
    }

    @Test("only the newest intervals are kept")
    func bounded() {
        let clock = Clock()
        let timeline = MetricsTimeline(clock: { clock.now.withLock { $0 } })
        for _ in 0..<(MetricsTimeline.kept + 10) {
            timeline.request(took: .milliseconds(1), status: 200)
            clock.advance(by: MetricsTimeline.interval.milliseconds)
        }
        let points = timeline.points()
        #expect(points.count == MetricsTimeline.kept)
        #expect(points.last.map { $0.start - points[0].start } == Int64(MetricsTimeline.kept - 1) * MetricsTimeline.interval.milliseconds)
    }

    @Test("the console serves the timeline to operators, with the requests just answered in it")
    func served() async throws {
        try await ConsoleTests.live { world, browser in
            let alice = try await ConsoleRecordsTests.signIn(browser, world.alice)
            _ = try await browser.send(.get, "/console/session", headers: alice.headers)
            let answer = try await browser.send(.get, "/console/api/metrics", headers: alice.headers)
            #expect(answer.status == 200, "\(answer.text)")
            let requests = (answer.json?["points"]?.arrayValue ?? []).compactMap { $0["requests"]?.int64Value }.reduce(0, +)
            #expect(requests >= 2, "\(answer.text)")
            let bob = try await ConsoleRecordsTests.signIn(browser, world.bob)
            #expect(try await browser.send(.get, "/console/api/metrics", headers: bob.headers).status == 403)
        }
    }
}
