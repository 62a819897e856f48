extension Duration {
    /// The duration in whole milliseconds (truncated toward zero): the one place a
    /// `Duration` becomes a count of milliseconds.
    public var milliseconds: Int64 {
        components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
    }

    /// The duration in whole nanoseconds (truncated toward zero).
    public var nanoseconds: Int64 {
        components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000
    }

    /// The duration in seconds, as a `Double` (for rates and metrics).
    public var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
