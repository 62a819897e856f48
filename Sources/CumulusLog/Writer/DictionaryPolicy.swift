/// When the writer trains a zstd dictionary from the log's own commits and
/// installs it as a `dictionaryInstalled` event (`Docs/LOG-FORMAT.md` §7
/// states the policy).
public struct DictionaryPolicy: Sendable {
    /// Whether to train dictionaries at all.
    public var enabled = true
    /// Commits the log must hold before the first dictionary is trained: enough
    /// samples for ZDICT to find the shared structure of records.
    public var firstTrainingAfter = 1_000
    /// Commits after an installation before training again, so a dictionary
    /// follows records as their shape drifts.
    public var retrainEvery = 100_000
    /// How many of the most recent commits to learn from.
    public var sampleCount = 2_000
    /// Dictionary size in bytes (16–64 KiB works best on records of a few hundred bytes).
    public var capacity = 32 * 1024
    /// A dictionary is installed only if it makes held-out commits at least this
    /// much smaller than the current compressor does.
    public var minimumGain = 1.05

    /// The default policy.
    public init() {}
}
