import CumulusModel
import CumulusStorage
import Synchronization

/// Decides when a new dictionary is due and trains it from the log's recent commits.
///
/// Samples are read back from the log and re-encoded (the commit encoding is
/// deterministic, so these are the exact bytes that were compressed), so nothing is
/// buffered in memory between trainings and a restart loses nothing.
final class DictionaryTrainer: Sendable {
    let store: LogStore
    let policy: DictionaryPolicy
    private let state: Mutex<State>

    struct State {
        var commitsSinceInstall: Int
        var training = false
    }

    init(store: LogStore, policy: DictionaryPolicy) {
        self.store = store
        self.policy = policy
        let since = store.currentDictionaryID == nil ? Int(clamping: store.head.sequence) : 0
        state = Mutex(State(commitsSinceInstall: since))
    }

    /// Counts newly committed commits; returns `true` when training should start now
    /// (the caller then runs ``train()`` off the writer thread and ``finish()`` after).
    func observe(_ appended: [(commit: Commit, bytes: [UInt8])]) -> Bool {
        guard policy.enabled, !appended.isEmpty else { return false }
        let installs = appended.contains { entry in
            entry.commit.events.contains { if case .dictionaryInstalled = $0 { true } else { false } }
        }
        return state.withLock { state in
            if installs { state.commitsSinceInstall = 0 }
            state.commitsSinceInstall += appended.count
            let threshold = store.currentDictionaryID == nil ? policy.firstTrainingAfter : policy.retrainEvery
            guard !state.training, state.commitsSinceInstall >= threshold else { return false }
            state.training = true
            return true
        }
    }

    /// Marks training finished; if no dictionary was installed, waits a full
    /// retraining interval before trying again.
    func finish(installed: Bool) {
        state.withLock { state in
            state.training = false
            if !installed { state.commitsSinceInstall = 0 }
        }
    }

    /// Trains a dictionary from recent commits and returns the request installing it,
    /// or `nil` if it would not pay for itself.
    func train() throws -> CommitRequest? {
        let head = store.head.sequence
        let count = UInt64(policy.sampleCount)
        // A log that dropped old commits (retention) samples what it still holds.
        let from = max(head > count ? head - count + 1 : 1, store.firstRetained)
        var samples: [[UInt8]] = []
        try store.commits(from: from, through: head) { commit in
            let isInstall = commit.events.contains { if case .dictionaryInstalled = $0 { true } else { false } }
            if !isInstall { samples.append(try CommitCodec.encode(commit)) }
            return true
        }
        guard samples.count >= 100 else { return nil }
        // Hold out every fifth commit to judge the dictionary on data it has not seen.
        var training: [[UInt8]] = []
        var heldOut: [[UInt8]] = []
        for (index, sample) in samples.enumerated() {
            if index % 5 == 4 { heldOut.append(sample) } else { training.append(sample) }
        }
        let dictionary = try ZstdDictionary.train(samples: training, capacity: policy.capacity)
        let candidate = try LogStore.compressor(for: dictionary)
        let incumbent = store.currentCompression()?.compressor ?? store.plainCompressor
        var withCandidate = 0
        var withIncumbent = 0
        for sample in heldOut {
            withCandidate += try candidate.compress(sample).count
            withIncumbent += try incumbent.compress(sample).count
        }
        guard Double(withIncumbent) >= Double(withCandidate) * policy.minimumGain else { return nil }
        let id = (store.highestDictionaryID() ?? 0) + 1
        return CommitRequest(
            actor: "", requestID: "cumulus.dictionary.\(id)",
            events: [.dictionaryInstalled(id: id, bytes: dictionary.bytes)])
    }
}
