/// What `LogStore.verifyChain` found.
public struct ChainReport: Sendable, Hashable, CustomStringConvertible {
    /// The first sequence checked.
    public var from: UInt64
    /// How many frames were checked and found sound.
    public var verified: UInt64
    /// The first sequence that failed, if any.
    public var firstBad: UInt64?
    /// Why it failed.
    public var problem: String?

    /// Whether every frame in the range was sound.
    public var isIntact: Bool { firstBad == nil }

    /// One line for operators.
    public var description: String {
        if let firstBad {
            return "chain broken at sequence \(firstBad) after \(verified) sound frames: \(problem ?? "unknown")"
        }
        return "chain intact: \(verified) frames from sequence \(from)"
    }
}
