import Foundation

/// Every decoder of bytes that reach Cumulus from outside, as a fuzz target: the
/// one list the driver (`cumulus-fuzz`), `make fuzz` and the corpus tests share.
///
/// Each target's input and oracle are in its own file; `Docs/SECURITY.md`
/// ("Fuzzing") says what each one reaches.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// A CloudKit Web Services request (route line, then JSON body) through `CloudKitAPI.handle`.
    case apiRequest = "api-request"
    /// `NSPredicate`-style query text through `PredicateParser`.
    case predicate
    /// CloudKit schema text through `SchemaParser`.
    case schema
    /// A change token's body, sealed, through its parser.
    case changeToken = "change-token"
    /// A notification token's body, sealed, through its parser.
    case notificationToken = "notification-token"
    /// A query cursor's body, sealed, through its parser (`QueryCodec` inside).
    case queryCursor = "query-cursor"
    /// The replication stream as a follower reads it, through `ReplicationMessageDecoder`.
    case replicationMessage = "replication-message"
    /// Log frames and commits as a follower or `replay` takes them, through
    /// `LogStore.appendFrames` and `Views.apply`.
    case logFrame = "log-frame"

    /// Runs one input.
    public func run(_ input: [UInt8]) async -> FuzzOutcome {
        switch self {
        case .apiRequest: await APIRequestTarget.run(input)
        case .predicate: PredicateTarget.run(input)
        case .schema: SchemaTarget.run(input)
        case .changeToken, .notificationToken, .queryCursor: TokenTarget.run(self, input)
        case .replicationMessage: ReplicationMessageTarget.run(input)
        case .logFrame: LogFrameTarget.run(input)
        }
    }

    /// Valid inputs made by the current code, from which the kept corpus
    /// (`Tools/Fuzz/Corpus/<target>/`) was written: each should be accepted.
    public func seeds() async throws -> [[UInt8]] {
        switch self {
        case .apiRequest: APIRequestTarget.seeds()
        case .predicate: PredicateTarget.seeds()
        case .schema: SchemaTarget.seeds()
        case .changeToken, .notificationToken, .queryCursor: try TokenTarget.seeds(self)
        case .replicationMessage: try await ReplicationMessageTarget.seeds()
        case .logFrame: try await LogFrameTarget.seeds()
        }
    }
}
