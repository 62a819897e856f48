import CumulusModel
import CumulusTestSupport
@testable import CumulusServer
import Dispatch
import Foundation
import HTTPTypes
import Synchronization
import Testing

/// The console's long work: jobs run one at a time with progress and a cancel (tested
/// on the type, where a job can be held still), and through a live socket the jobs an
/// operator starts: a chain verify, an audit export verified and downloaded, a past state
/// for "as of", a diff; and a commit read whole.
@Suite("Web console: jobs")
struct ConsoleJobsTests {
    /// Waits, with a deadline, until `condition` holds. The condition is asked once more
    /// after the deadline passes: under the whole suite, this task itself can wake from
    /// its sleep past the deadline (the pool's threads held by other tests), long after
    /// what it waits for happened, and that is no failure of the code under test.
    static func eventually(_ what: String, _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(300)
        while true {
            if try await condition() { return }
            guard ContinuousClock.now < deadline else { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("timed out waiting for \(what)")
    }

    @Test("a running job stops at its next report once cancelled; a queued one never starts; the newest are kept")
    func cancelling() async throws {
        let directory = TemporaryDirectory("jobs")
        let jobs = ConsoleJobs(dataPath: directory.path)
        let gate = DispatchSemaphore(value: 0)
        let reached = SharedValue(0)
        let running = jobs.start(kind: "test", label: "held", owner: "olivia", total: 2) { work in
            try work.report(1)
            reached.set(1)
            gate.wait()
            try work.report(2)
            reached.set(2)
            return JSONValue.null
        }
        let queued = jobs.start(kind: "test", label: "queued", owner: "olivia") { _ in
            reached.set(99)
            return JSONValue.null
        }
        try await Self.eventually("the first job to report") { jobs.status(running.id)?.done == 1 }
        #expect(jobs.status(running.id)?.state == .running && jobs.status(queued.id)?.state == .queued)
        #expect(jobs.cancel(queued.id) && jobs.cancel(running.id))
        gate.signal()
        try await Self.eventually("both to end") {
            jobs.status(running.id)?.finished != nil && jobs.status(queued.id)?.finished != nil
        }
        #expect(jobs.status(running.id)?.state == .cancelled && jobs.status(queued.id)?.state == .cancelled)
        #expect(reached.get() == 1, "the running job stopped at its report; the queued one never ran")
        #expect(!jobs.cancel(running.id), "an ended job cannot be cancelled")

        let failing = jobs.start(kind: "test", label: "fails", owner: "olivia") { _ in
            throw CumulusError(.invalidArguments, "no such thing")
        }
        try await Self.eventually("the failure") { jobs.status(failing.id)?.finished != nil }
        #expect(jobs.status(failing.id)?.state == .failed && jobs.status(failing.id)?.error == "no such thing")
        for index in 0..<(ConsoleJobs.kept + 5) {
            _ = jobs.start(kind: "test", label: "\(index)", owner: "olivia") { _ in JSONValue.null }
        }
        try await Self.eventually("all to end") { jobs.all().allSatisfy { $0.finished != nil } }
        #expect(jobs.all().count == ConsoleJobs.kept, "once all have ended, the newest are kept")
        #expect(jobs.all().contains { $0.label == "\(ConsoleJobs.kept + 4)" } && !jobs.all().contains { $0.label == "held" })
    }

    /// Starts a job through the socket and waits for it to end; its last status.
    static func run(_ browser: ConsoleTests.Browser, _ session: ConsoleRecordsTests.Session, _ body: String)
        async throws -> JSONValue?
    {
        let started = try await browser.send(.post, "/console/api/jobs", headers: session.headers, body: body)
        #expect(started.status == 200, "\(started.text)")
        let id = try #require(started.json?["id"]?.stringValue)
        var last: JSONValue?
        try await eventually("job \(body)") {
            last = try await browser.send(.get, "/console/api/jobs/job?id=\(id)", headers: session.headers).json
            return last?["finished"] != nil
        }
        return last
    }

    @Test("an operator verifies the chain, exports a range for auditors (verified, then downloaded), makes a past state ready and diffs two points")
    func jobsThroughTheSocket() async throws {
        try await ConsoleTests.live { world, browser in
            _ = try await world.post("zones/modify", ConsoleRecordsTests.createLists)
            for title in ["one", "two"] {
                _ = try await world.post(
                    "records/modify",
                    #"{"zoneID":{"zoneName":"Lists"},"operations":[{"operationType":"forceUpdate","record":{"recordName":"r","recordType":"Item","fields":{"title":{"value":"\#(title)"}}}}]}"#)
            }
            let head = world.container.store.head.sequence
            let alice = try await ConsoleRecordsTests.signIn(browser, world.alice)

            let verify = try await Self.run(browser, alice, #"{"kind":"verify"}"#)
            #expect(verify?["state"]?.stringValue == "done" && verify?["result"]?["valid"] == .bool(true), "\(String(describing: verify))")
            #expect(verify?["result"]?["verified"]?.int64Value == Int64(head) && verify?["done"]?.int64Value == Int64(head))

            let audit = try await Self.run(browser, alice, #"{"kind":"audit","from":2,"through":\#(head),"format":"jsonl"}"#)
            #expect(audit?["result"]?["valid"] == .bool(true), "\(String(describing: audit))")
            let id = try #require(audit?["id"]?.stringValue)
            let file = try await browser.send(.get, "/console/api/jobs/download?id=\(id)", headers: alice.headers)
            #expect(file.status == 200 && file.header("Content-Disposition")?.contains("cumulus-audit-2-\(head).jsonl") == true)
            let lines = file.text.split(separator: "\n")
            #expect(lines.count == Int(audit?["result"]?["events"]?.int64Value ?? -1) + 1, "a header, then one line an event")
            #expect(lines.dropFirst().allSatisfy { $0.contains(#""sequence":"#) })

            let past = try await Self.run(browser, alice, #"{"kind":"as-of","point":"2"}"#)
            #expect(past?["result"]?["sequence"]?.int64Value == 2 && past?["total"]?.int64Value == 2, "\(String(describing: past))")

            let diff = try await Self.run(browser, alice, #"{"kind":"diff","from":"1","to":"\#(head)"}"#)
            #expect(diff?["result"]?["count"]?.int64Value == 1, "\(String(describing: diff))")
            #expect(diff?["result"]?["differences"]?[0]?["record"]?.stringValue == "r")
            #expect(diff?["result"]?["differences"]?[0]?["kind"]?.stringValue == "created")

            let bisect = try await Self.run(browser, alice, #"{"kind":"bisect","type":"Item","query":"title == 'two'"}"#)
            #expect(bisect?["result"]?["found"] == .bool(true) && bisect?["result"]?["sequence"]?.int64Value == Int64(head), "\(String(describing: bisect))")
            #expect(bisect?["result"]?["changed"]?[0]?.stringValue == "r" && bisect?["result"]?["countBefore"]?.int64Value == 0)
            let never = try await Self.run(browser, alice, #"{"kind":"bisect","type":"Item","query":"title == 'three'"}"#)
            #expect(never?["result"]?["found"] == .bool(false))

            let listed = try await browser.send(.get, "/console/api/jobs", headers: alice.headers)
            #expect(listed.json?.arrayValue?.map { $0["kind"]?.stringValue } == ["bisect", "bisect", "diff", "as-of", "audit", "verify"])
        }
    }

    @Test("a commit read whole: its chain hash and each event's audit line; the head; unknown commits, users, unknown kinds and starts without the CSRF token refused")
    func commitsAndRefusals() async throws {
        try await ConsoleTests.live { world, browser in
            _ = try await world.post("zones/modify", ConsoleRecordsTests.createLists)
            let alice = try await ConsoleRecordsTests.signIn(browser, world.alice)
            let commit = try await browser.send(.get, "/console/api/commit?sequence=1", headers: alice.headers)
            #expect(commit.status == 200, "\(commit.text)")
            #expect(commit.json?["user"]?.stringValue == world.alice && commit.json?["hash"]?.stringValue?.count == 64)
            #expect(commit.json?["events"]?[0]?["operation"]?.stringValue == "zoneSaved")
            let head = try await browser.send(.get, "/console/api/commit?sequence=head", headers: alice.headers)
            #expect(head.json?["sequence"]?.int64Value == Int64(world.container.store.head.sequence))
            #expect(head.json?["headHash"]?.stringValue == commit.json?["hash"]?.stringValue, "one commit: the head is it")
            #expect(try await browser.send(.get, "/console/api/commit?sequence=99", headers: alice.headers).status == 404)
            #expect(try await browser.send(.get, "/console/api/commit?sequence=x", headers: alice.headers).status == 400)

            #expect(try await browser.send(.post, "/console/api/jobs", headers: alice.headers, body: #"{"kind":"mine"}"#).status == 400)
            #expect(try await browser.send(.post, "/console/api/jobs", headers: alice.headers, body: #"{"kind":"diff","from":"x","to":"1"}"#).status == 400)
            #expect(try await browser.send(.post, "/console/api/jobs", headers: alice.headers, body: #"{"kind":"bisect","type":"Item","query":"title ==="}"#).status == 400)
            #expect(try await browser.send(.post, "/console/api/jobs", headers: alice.headers, body: #"{"kind":"bisect","type":"Item","query":"x == 1","when":"someday"}"#).status == 400)
            #expect(try await browser.send(.get, "/console/api/jobs/job?id=nothing", headers: alice.headers).status == 404)
            #expect(try await browser.send(.get, "/console/api/jobs/download?id=nothing", headers: alice.headers).status == 404)
            var noCSRF = alice.headers
            noCSRF["X-Cumulus-CSRF"] = nil
            #expect(try await browser.send(.post, "/console/api/jobs", headers: noCSRF, body: #"{"kind":"verify"}"#).status == 403)
            let bob = try await ConsoleRecordsTests.signIn(browser, world.bob)
            #expect(try await browser.send(.get, "/console/api/jobs", headers: bob.headers).status == 403)
            #expect(try await browser.send(.get, "/console/api/commit?sequence=1", headers: bob.headers).status == 403)
        }
    }
}

/// A value shared with a job's thread.
final class SharedValue<Value: Sendable>: Sendable {
    private let value: Mutex<Value>
    init(_ value: Value) { self.value = Mutex(value) }
    func get() -> Value { value.withLock { $0 } }
    func set(_ new: Value) { value.withLock { $0 = new } }
}
