import Synchronization

/// Answers of record reads kept by request and handed back instead of asking the
/// engine: the ceiling `make bench` measures the read paths against (its `http-read`
/// suite). A request still goes through everything else the server does (parsing,
/// authentication, rate limits, request logging, metrics), so the ratio of the real
/// route to this one is what the engine and the answer's writing cost.
///
/// Never set in service (`CloudKitAPI.readCeiling` is `nil`): a kept answer is not
/// checked against anything, access included. Each answer is kept by route, caller and
/// body bytes, and the first request of each is answered by the engine.
public final class ReadCeiling: Sendable {
    /// The routes whose answers are kept: those that carry records.
    static let routes: Set<String> = ["records/query", "records/lookup", "records/changes", "changes/zone"]

    private let answers = Mutex<[String: [UInt8]]>([:])

    /// An empty cache.
    public init() {}

    /// The kept answer to `route` for `caller` and `body`, or `answer()`'s, which is kept
    /// when it succeeded.
    func answer(
        _ route: String, caller: String?, body: [UInt8], _ answer: () async throws -> APIResponse
    ) async throws -> APIResponse {
        guard Self.routes.contains(route) else { return try await answer() }
        let key = route + "\u{0}" + (caller ?? "") + "\u{0}" + String(decoding: body, as: UTF8.self)
        if let kept = answers.withLock({ $0[key] }) { return APIResponse(written: kept) }
        let response = try await answer()
        if response.status == 200 {
            let bytes = response.bodyBytes()
            answers.withLock { $0[key] = bytes }
        }
        return response
    }
}
