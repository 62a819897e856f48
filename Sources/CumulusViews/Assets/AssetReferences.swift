/// What the views count of one asset file.
public struct AssetReferences: Sendable, Hashable {
    /// Current records holding it.
    public var count: UInt64
    /// The last commit that saved a record version holding it (0: none).
    public var lastSaved: UInt64

    /// Counts.
    public init(count: UInt64, lastSaved: UInt64) {
        self.count = count
        self.lastSaved = lastSaved
    }

    /// Whether a record version the log still holds refers to the file: a current
    /// record does, or the last commit that saved one is at or after `retainedFrom`,
    /// the first commit the log keeps.
    public func isReachable(retainedFrom: UInt64) -> Bool {
        count > 0 || (lastSaved > 0 && lastSaved >= retainedFrom)
    }
}
