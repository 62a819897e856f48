import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusTestSupport
import Synchronization
import Testing

/// The writer's one gate: a refusal before anything is written, then each policy in the
/// order of its stage, whatever order they were installed in.
@Suite("Acknowledgement gate", .timeLimit(.minutes(5)))
struct AcknowledgementGateTests {
    /// A policy that notes each call in a shared journal, admits or refuses as told, and
    /// holds each group until ``open()`` (or releases it at once).
    final class Journaled: AcknowledgementPolicy {
        let name: String
        let journal: Journal
        let refusal: CumulusError?
        let holds: Bool
        private let held = Mutex<[@Sendable ((any Error)?) -> Void]>([])
        /// One element for each group it holds: a test waits on it, not on the clock.
        let holding: AsyncStream<UInt64>
        private let heldGroups : AsyncStream<UInt64>.Continuation

        init(_ name: String, _ journal: Journal, refusing refusal: CumulusError? = nil, holds: Bool = false) {
            (self.name, self.journal, self.refusal, self.holds) = (name, journal, refusal, holds)
            (holding, heldGroups) = AsyncStream.makeStream()
        }

        func admit() async -> (any Error)? {
            journal.entries.withLock { $0.append("\(name) admits") }
            return nil
        }

        func release(through sequence: UInt64, _ answer: @escaping @Sendable ((any Error)?) -> Void) {
            journal.entries.withLock { $0.append("\(name) releases \(sequence)") }
            if holds {
                held.withLock { $0.append(answer) }
                heldGroups.yield(sequence)
            } else {
                answer(refusal)
            }
        }

        func open() {
            for answer in held.withLock({ held in defer { held.removeAll() }; return held }) { answer(nil) }
        }
    }

    /// A journal shared between the test and its policies.
    final class Journal: Sendable {
        let entries = Mutex<[String]>([])
        var all: [String] { entries.withLock { $0 } }
    }

    @Test("a refusal turns a write away before any policy is asked and before anything is written")
    func refusalComesFirst() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let writer = LogWriter(store: try openStore(dir))
        defer { writer.close() }
        let journal = Journal()
        writer.gate.install(Journaled("replicas", journal), at: .replicas)
        writer.gate.refuse(CumulusError(.notLeader, "a follower"))
        var rng = SeededRandom(seed: 31)
        await #expect(throws: CumulusError.self) { try await writer.append(sampleRequest(0, rng: &rng)) }
        #expect(journal.all.isEmpty)
        #expect(writer.store.head.sequence == 0)
        writer.gate.refuse(nil)
        let commit = try await writer.append(sampleRequest(1, rng: &rng))
        #expect(commit.sequence == 1)
        #expect(journal.all == ["replicas admits", "replicas releases 1"])
    }

    @Test("stages run in order, the lease asked last, after the replicas released the group")
    func stagesRunInOrder() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let writer = LogWriter(store: try openStore(dir))
        defer { writer.close() }
        let journal = Journal()
        let lease = Journaled("lease", journal)
        let replicas = Journaled("replicas", journal, holds: true)
        // Installed in the wrong order on purpose: the stages decide.
        writer.gate.install(lease, at: .lease)
        writer.gate.install(replicas, at: .replicas)
        var rng = SeededRandom(seed: 32)
        let request = sampleRequest(0, rng: &rng)
        let write = Task { try await writer.append(request) }
        // Durable, and held by the replicas' stage until it opens.
        var holding = replicas.holding.makeAsyncIterator()
        #expect(await holding.next() == 1)
        #expect(writer.store.head.sequence == 1)
        #expect(journal.all == ["replicas admits", "lease admits", "replicas releases 1"])
        replicas.open()
        #expect(try await write.value.sequence == 1)
        #expect(journal.all == ["replicas admits", "lease admits", "replicas releases 1", "lease releases 1"])
    }

    @Test("an error from a stage is each write's answer; the commit stays in the log")
    func aStageErrorIsTheAnswer() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let writer = LogWriter(store: try openStore(dir))
        defer { writer.close() }
        let journal = Journal()
        writer.gate.install(
            Journaled("replicas", journal, refusing: CumulusError(.serverRejectedRequest, "not confirmed")),
            at: .replicas)
        writer.gate.install(Journaled("lease", journal), at: .lease)
        var rng = SeededRandom(seed: 33)
        let request = sampleRequest(0, rng: &rng)
        do {
            try await writer.append(request)
            Issue.record("a write no stage released was acknowledged")
        } catch let error as CumulusError {
            #expect(error.message == "not confirmed")
        }
        #expect(writer.store.head.sequence == 1, "durable though unacknowledged")
        #expect(!journal.all.contains("lease releases 1"), "a refused group goes no further")
        // Removed, the stage no longer holds anything.
        writer.gate.install(nil, at: .replicas)
        #expect(try await writer.append(sampleRequest(1, rng: &rng)).sequence == 2)
    }
}
