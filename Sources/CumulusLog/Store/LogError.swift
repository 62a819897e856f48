/// Failures of the log itself: damage, gaps and misuse. The engine reports them
/// to clients as `internalError`; operators see these messages.
public enum LogError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The stored frame for `sequence` fails a check (checksum, header, decode).
    case corruptFrame(sequence: UInt64, reason: String)
    /// The frame's chain hash does not follow from its predecessor's.
    case chainBroken(sequence: UInt64)
    /// No commit with this sequence is stored.
    case missing(sequence: UInt64)
    /// Commit `sequence` was dropped by log retention (`cumulus serve --retain-commits`):
    /// the log now starts at `firstRetained`.
    case truncated(sequence: UInt64, firstRetained: UInt64)
    /// A frame names a dictionary the log never installed.
    case unknownDictionary(sequence: UInt64, dictionaryID: UInt32)
    /// A frame offered for appending does not continue this log (wrong sequence
    /// or chain hash) — a follower refuses it rather than fork.
    case doesNotContinue(expected: UInt64, got: UInt64, reason: String)
    /// The log is closed or its writer stopped.
    case closed
    /// A storage failure underneath, with its description.
    case storage(String)
    /// The views may have been torn by a crash of the machine and cannot be made again
    /// from this log (retention dropped its first commits): the data directory must be
    /// restored, or a follower seeded again (``ViewsDurability``).
    case viewsTorn(String)

    /// A sentence for operators.
    public var description: String {
        switch self {
        case .corruptFrame(let sequence, let reason): "log frame \(sequence) is corrupt: \(reason)"
        case .chainBroken(let sequence): "hash chain broken at sequence \(sequence)"
        case .missing(let sequence): "log has no commit \(sequence)"
        case .truncated(let sequence, let first):
            "commit \(sequence) was dropped by log retention (--retain-commits): this log starts at commit \(first)"
        case .unknownDictionary(let sequence, let id):
            "log frame \(sequence) names dictionary \(id), which was never installed"
        case .doesNotContinue(let expected, let got, let reason):
            "frame \(got) does not continue the log at \(expected): \(reason)"
        case .closed: "the log is closed"
        case .storage(let message): "storage failure: \(message)"
        case .viewsTorn(let message): message
        }
    }
}
