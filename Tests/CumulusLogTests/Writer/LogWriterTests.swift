import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusTestSupport
import Synchronization
import Testing

@Suite("Log writer")
struct LogWriterTests {
    @Test("64 concurrent writers each get a durable, distinct commit; the chain holds")
    func concurrentAppends() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let store = try openStore(dir)
        let writer = LogWriter(store: store)
        defer { writer.close() }
        var rng = SeededRandom(seed: 11)
        let requests = (0..<256).map { sampleRequest($0, rng: &rng) }
        let clock = ContinuousClock()
        let started = clock.now
        let sequences = try await withThrowingTaskGroup(of: (String, UInt64).self) { group in
            for request in requests {
                group.addTask { (request.requestID, try await writer.append(request).sequence) }
            }
            var all: [String: UInt64] = [:]
            for try await (id, sequence) in group { all[id] = sequence }
            return all
        }
        #expect(Set(sequences.values) == Set(1...256))
        for request in requests {
            guard let sequence = sequences[request.requestID] else { continue }
            #expect(try store.read(sequence)?.requestID == request.requestID)
        }
        #expect(try store.verifyChain().verified == 256)
        #expect(writer.statistics.commits == 256)
        #expect(writer.statistics.groups < 256, "group commit should put several commits in one transaction")
        // The writer's CPU is its one thread's: some, and never more than the time that passed.
        let cpu = writer.statistics.cpu
        #expect(cpu > .zero && cpu <= clock.now - started, "\(cpu)")
    }

    @Test("a failing plan fails only its own submission")
    func planFailureIsIsolated() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let store = try openStore(dir)
        let writer = LogWriter(store: store)
        defer { writer.close() }
        var rng = SeededRandom(seed: 12)
        let good = (0..<20).map { sampleRequest($0, rng: &rng) }
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for (index, request) in good.enumerated() {
                group.addTask {
                    do {
                        _ = try await writer.submit { _ -> (CommitRequest?, Int) in
                            if index % 4 == 0 { throw CumulusError(.invalidArguments, "planned failure") }
                            return (request, index)
                        }
                        return true
                    } catch { return false }
                }
            }
            var results: [Bool] = []
            for await result in group { results.append(result) }
            return results
        }
        #expect(outcomes.filter { $0 }.count == 15)
        #expect(try store.lastSequence() == 15)
        #expect(try store.verifyChain().isIntact)
    }

    @Test("an applier failure aborts only the culprit's commit, after a retry one by one")
    func applierFailureIsIsolated() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let store = try openStore(dir)
        let views = try store.environment.table("testView")
        let writer = LogWriter(store: store) { commit, _, txn in
            if commit.requestID.hasSuffix("-poison") { throw CumulusError(.internalError, "view failed") }
            try txn.put(views, key: Array(commit.requestID.utf8), value: BigEndian.bytes(commit.sequence))
        }
        defer { writer.close() }
        var rng = SeededRandom(seed: 13)
        var requests = (0..<30).map { sampleRequest($0, rng: &rng) }
        requests[7].requestID += "-poison"
        let failures = await withTaskGroup(of: Int.self) { group in
            for request in requests {
                group.addTask { (try? await writer.append(request)) == nil ? 1 : 0 }
            }
            return await group.reduce(0, +)
        }
        #expect(failures == 1)
        #expect(try store.lastSequence() == 29)
        // The view holds exactly the committed commits, at their sequences.
        try store.environment.read { txn in
            #expect(try txn.count(views) == 29)
            for commit in try store.range(from: 1) {
                #expect(try txn.get(views, key: Array(commit.requestID.utf8)) == BigEndian.bytes(commit.sequence))
            }
        }
    }

    @Test("after enough commits a dictionary is trained, logged, and used by later frames")
    func dictionaryInstalled() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let store = try openStore(dir)
        var options = LogWriter.Options()
        options.dictionary.firstTrainingAfter = 300
        options.dictionary.sampleCount = 300
        let writer = LogWriter(store: store, options: options)
        defer { writer.close() }
        var rng = SeededRandom(seed: 14)
        for index in 0..<300 { try await writer.append(sampleRequest(index, rng: &rng)) }
        // Training runs in the background; wait for the install commit.
        var installedAt: UInt64?
        for try await commit in store.tail(from: 301) {
            if commit.events.contains(where: { if case .dictionaryInstalled = $0 { true } else { false } }) {
                installedAt = commit.sequence
                break
            }
        }
        #expect(installedAt != nil)
        #expect(store.currentDictionaryID == 1)
        let after = try await writer.append(sampleRequest(1000, rng: &rng))
        guard let bytes = try store.frameBytes(after.sequence) else { return }
        let frame = try Frame(parsing: bytes, expectedSequence: after.sequence)
        #expect(frame.dictionaryID == 1)
        #expect(try store.read(after.sequence) == after)
        #expect(try store.verifyChain().isIntact)
        // Reopened, the log still reads dictionary-compressed frames.
        writer.close()
    }

    @Test("a closed writer refuses work")
    func closedWriterRefuses() async throws {
        let dir = TemporaryDirectory()
        defer { dir.remove() }
        let store = try openStore(dir)
        let writer = LogWriter(store: store)
        writer.close()
        var rng = SeededRandom(seed: 15)
        await #expect(throws: LogError.self) { try await writer.append(sampleRequest(0, rng: &rng)) }
    }
}
