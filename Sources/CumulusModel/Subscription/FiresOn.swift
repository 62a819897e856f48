/// Which record changes fire a query subscription (CloudKit's
/// `CKQuerySubscription.Options` without `firesOnce`, which is a separate flag here).
/// Raw values are CloudKit's, so they can cross the wire unchanged.
public struct FiresOn: OptionSet, Sendable, Hashable {
    /// The bits.
    public let rawValue: UInt8

    /// Options from their bits.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// A matching record was created.
    public static let creation = FiresOn(rawValue: 1)
    /// A record that matches after the change was updated.
    public static let update = FiresOn(rawValue: 2)
    /// A record that matched before it was deleted was deleted.
    public static let deletion = FiresOn(rawValue: 4)
    /// Every transition.
    public static let all: FiresOn = [.creation, .update, .deletion]
}
