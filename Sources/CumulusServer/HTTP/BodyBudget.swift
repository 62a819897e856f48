import Synchronization

/// Bytes of request bodies the server holds at once, over all connections
/// (``ServerLimits/maxBodyBufferBytes``).
///
/// Each connection may send a body of up to `CloudKitAPI.maxBodyBytes` (4 MiB), and
/// the server collects it whole before it can read a byte of JSON: a thousand
/// connections sending large bodies slowly would hold 4 GiB. A request reserves what
/// its `Content-Length` says (the most a body may be, when it is chunked) before its
/// body is read, and gives it back when it is answered; a request that finds the
/// budget spent is answered `TRY_AGAIN_LATER` at once, without reading its body.
///
/// Once read, a body also reserves what its JSON may take when parsed
/// (`JSONValue.memoryLimit(forBodyBytes:)`, 24 times its size): its tape and the
/// values built from it, which its `JSONDocument` keeps to: a body built to parse into
/// millions of values (`[[1],[1],…]`) would otherwise hold a hundred megabytes per
/// request being parsed.
final class BodyBudget: Sendable {
    private let remaining: Mutex<Int>

    init(bytes: Int) { remaining = Mutex(bytes) }

    /// Takes `bytes` from the budget; `nil` if they are not there.
    func reserve(_ bytes: Int) -> Reservation? {
        let taken = remaining.withLock { remaining -> Bool in
            guard bytes <= remaining else { return false }
            remaining -= bytes
            return true
        }
        return taken ? Reservation(budget: self, bytes: bytes) : nil
    }

    /// Bytes taken from a budget, given back when it goes away.
    final class Reservation: Sendable {
        private let budget: BodyBudget
        private let bytes: Int

        fileprivate init(budget: BodyBudget, bytes: Int) {
            self.budget = budget
            self.bytes = bytes
        }

        deinit { budget.remaining.withLock { $0 += bytes } }
    }
}
