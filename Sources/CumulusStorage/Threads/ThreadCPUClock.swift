#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The CPU time the calling thread has used (`CLOCK_THREAD_CPUTIME_ID`): what a
/// thread spent working, whatever else the machine ran or how long it waited (for an
/// fsync, a lock). The writer's cost per commit and a request's CPU budget are read
/// from it, so a loaded machine moves neither.
public enum ThreadCPUClock {
    /// The calling thread's CPU time so far (zero where the clock is not available).
    public static func now() -> Duration {
        var time = timespec()
        guard clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time) == 0 else { return .zero }
        return .seconds(Int64(time.tv_sec)) + .nanoseconds(Int64(time.tv_nsec))
    }
}
