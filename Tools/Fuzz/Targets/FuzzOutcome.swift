/// What one fuzz input did to a target.
public enum FuzzOutcome: Sendable, Equatable {
    /// The input was taken (parsed, applied or answered with success).
    case accepted
    /// The input was refused the way the target's callers expect (a clear error).
    case refused(String)
    /// A property the target must keep was broken: a finding. The fuzz driver stops
    /// on it, and the corpus tests fail on it.
    case broken(String)

    /// Whether this is a finding.
    public var isBroken: Bool {
        if case .broken = self { return true }
        return false
    }
}
