/// How far behind the log a subscription is (its lag): the commit that last fired
/// it and the log's head when asked.
public struct SubscriptionStatus: Sendable, Hashable {
    /// The subscription.
    public var subscriptionID: String
    /// The global sequence of the last commit that fired it (`nil`: never fired, or
    /// not since it was last saved).
    public var lastFiredSequence: UInt64?
    /// The log's last sequence when the status was read.
    public var logHead: UInt64

    /// A status.
    public init(subscriptionID: String, lastFiredSequence: UInt64?, logHead: UInt64) {
        self.subscriptionID = subscriptionID
        self.lastFiredSequence = lastFiredSequence
        self.logHead = logHead
    }
}
