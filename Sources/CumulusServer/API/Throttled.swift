/// A request refused because its client sends too much (a request rate limit, a cap on
/// waiting long polls): CloudKit's `THROTTLED` (HTTP 429), with `retryAfter` in the
/// body as CloudKit sends it (`Docs/HTTP-API.md`, "Errors").
///
/// Not one of Cumulus's error codes (`Docs/DATA-MODEL.md`, "Errors"), and not a ``CumulusError``: the engine never refuses
/// for this, only the HTTP API's door does, before any operation starts (as with
/// ``CloudKitAPI/AuthenticationFailure``). The native client's name for it is
/// `requestRateLimited`.
struct Throttled: Error, Sendable {
    /// What was exceeded, and what to do; the body's `reason`.
    let reason: String
    /// Whole seconds to wait before retrying, at least 1: the body's `retryAfter`.
    let retryAfter: Int

    /// A refusal saying `reason`, to be retried after `wait`, rounded up to whole
    /// seconds (CloudKit's unit) and at least one.
    init(_ reason: String, retryAfter wait: Duration) {
        self.reason = reason
        let seconds = wait.components.seconds + (wait.components.attoseconds > 0 ? 1 : 0)
        retryAfter = Int(clamping: max(seconds, 1))
    }
}
