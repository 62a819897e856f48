import CumulusModel

/// The console's charts (operators): the node's last minutes from its metrics
/// (``MetricsTimeline``), one point per interval.
extension CloudKitAPI {
    /// `GET /console/api/metrics`: the points held, oldest first.
    func consoleMetrics() -> JSONValue {
        let points = metrics?.timeline.points() ?? []
        func number(_ value: Double?) -> JSONValue { value.map { .double($0) } ?? .null }
        return [
            "intervalMilliseconds": .int(MetricsTimeline.interval.milliseconds),
            "points": .array(points.map { point in
                [
                    "start": .int(point.start), "requests": .int(Int64(point.requests)), "errors": .int(Int64(point.errors)),
                    "p50": number(point.p50), "p99": number(point.p99), "groups": .int(Int64(point.groups)),
                    "commits": .int(Int64(point.commits)), "commitMean": number(point.commitMean),
                    "commitMax": number(point.commitMax),
                    "followers": .object(point.followers.mapValues { lag in
                        ["commits": .int(Int64(clamping: lag.commits)), "milliseconds": .int(lag.milliseconds)]
                    }),
                ]
            }),
        ]
    }
}
