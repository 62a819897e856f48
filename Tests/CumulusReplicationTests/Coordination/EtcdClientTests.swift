@testable import CumulusReplication
import Foundation
import Testing

/// The etcd client against a real etcd (a private one per test, on loopback).
@Suite struct EtcdClientTests {
    @Test func keysPutReadDeletedAndListedByPrefix() async throws {
        let etcd = try await EtcdServer()
        let client = EtcdClient(endpoints: [etcd.clientURL])
        defer { Task { await client.shutdown() } }

        let (absent, _) = try await client.get("/t/a")
        #expect(absent == nil)
        try await client.put("/t/a", Array("one".utf8))
        try await client.put("/t/b", [0, 0xFF, 10])
        try await client.put("/u/c", Array("other prefix".utf8))
        let (read, revision) = try await client.get("/t/a")
        #expect(read?.value == Array("one".utf8))
        #expect(read?.version == 1)
        #expect(read.map { $0.createRevision == $0.modRevision } == true)
        #expect(revision >= read?.modRevision ?? .max)
        #expect(try await client.get(prefix: "/t/").map(\.keyText) == ["/t/a", "/t/b"])
        #expect(try await client.get(prefix: "/t/").last?.value == [0, 0xFF, 10], "bytes round-trip through base64")

        try await client.put("/t/a", Array("two".utf8))
        #expect(try await client.get("/t/a").value?.version == 2)
        try await client.delete("/t/a")
        #expect(try await client.get("/t/a").value == nil)
        try await client.delete("/t/never")  // deleting nothing is no error
    }

    @Test func aTransactionCreatesOnlyIfAbsentAndOtherwiseReads() async throws {
        let etcd = try await EtcdServer()
        let client = EtcdClient(endpoints: [etcd.clientURL])
        defer { Task { await client.shutdown() } }

        func claim(_ value: String) -> EtcdTransaction {
            EtcdTransaction(
                compare: [.createRevision("/t/leader", equals: 0)],
                success: [.put("/t/leader", Array(value.utf8), lease: nil), .put("/t/count", Array("1".utf8), lease: nil)],
                failure: [.get("/t/leader"), .get("/t/missing")])
        }
        let first = try await client.run(claim("n1"))
        #expect(first.succeeded)
        #expect(first.reads.isEmpty)
        let second = try await client.run(claim("n2"))
        #expect(!second.succeeded)
        #expect(second.reads.count == 2)
        #expect(second.reads.first??.value == Array("n1".utf8), "the losing branch names the holder")
        #expect(second.reads.last == .some(nil), "a missing key reads as nil")
        #expect(try await client.get("/t/leader").value?.value == Array("n1".utf8))

        // Compare-and-set on a value and a mod revision.
        let (count, _) = try await client.get("/t/count")
        let stale = try await client.run(
            EtcdTransaction(
                compare: [.modRevision("/t/count", equals: (count?.modRevision ?? 0) - 1)],
                success: [.put("/t/count", Array("2".utf8), lease: nil)]))
        #expect(!stale.succeeded)
        let fresh = try await client.run(
            EtcdTransaction(
                compare: [.modRevision("/t/count", equals: count?.modRevision ?? 0), .value("/t/leader", equals: Array("n1".utf8))],
                success: [.put("/t/count", Array("2".utf8), lease: nil)]))
        #expect(fresh.succeeded)
        #expect(try await client.get("/t/count").value?.value == Array("2".utf8))
    }

    @Test func aLeaseKeepsItsKeysUntilRevokedOrExpired() async throws {
        let etcd = try await EtcdServer()
        let client = EtcdClient(endpoints: [etcd.clientURL])
        defer { Task { await client.shutdown() } }

        // Long enough to outlast a loaded machine: this one ends by revocation.
        let lease = try await client.grantLease(ttl: .seconds(60))
        #expect(lease.ttl >= .seconds(60))
        try await client.put("/t/session", Array("here".utf8), lease: lease.id)
        #expect(try await client.get("/t/session").value?.lease == lease.id)
        #expect(try await client.keepAlive(lease.id) != nil)
        try await client.revoke(lease.id)
        #expect(try await client.get("/t/session").value == nil, "revoking a lease deletes its keys")
        #expect(try await client.keepAlive(lease.id) == nil, "a revoked lease cannot be renewed")
        try await client.revoke(lease.id)  // revoking it again is no error

        // One left alone expires, and its key with it.
        let short = try await client.putUnderNewLease("/t/short", [1], ttl: .seconds(1))
        try await waitUntil("the unrenewed lease's key to go", timeout: .seconds(60)) {
            try await client.get("/t/short").value == nil
        }
        #expect(try await client.keepAlive(short) == nil)
    }

    @Test func aWatchReportsPutsAndDeletesInOrder() async throws {
        let etcd = try await EtcdServer()
        let client = EtcdClient(endpoints: [etcd.clientURL])
        defer { Task { await client.shutdown() } }

        try await client.put("/t/w", Array("before".utf8))
        let (_, revision) = try await client.get("/t/w")
        let watch = Task {
            var seen: [EtcdWatchEvent] = []
            for try await event in client.watch("/t/w", from: revision + 1) {
                seen.append(event)
                if seen.count == 3 { break }
            }
            return seen
        }
        // The watch starts after `revision`: these three changes, nothing before.
        let lease = try await client.grantLease(ttl: .seconds(60))  // ends by revocation
        try await client.put("/t/w", Array("a".utf8))
        try await client.put("/t/other", Array("not watched".utf8))
        try await client.put("/t/w", Array("b".utf8), lease: lease.id)
        try await client.revoke(lease.id)
        let seen = try await withDeadline(.seconds(120)) { try await watch.value }
        guard seen.count == 3, case .put(let first) = seen[0], case .put(let second) = seen[1],
            case .delete(let key, let deletedAt) = seen[2]
        else {
            Issue.record("unexpected events: \(seen)")
            return
        }
        #expect(first.value == Array("a".utf8))
        #expect(second.value == Array("b".utf8))
        #expect(second.lease == lease.id)
        #expect(key == Array("/t/w".utf8))
        #expect(deletedAt > second.modRevision)
    }

    @Test func anUnreachableEndpointIsSkippedAndNoneAnsweringIsTransient() async throws {
        let etcd = try await EtcdServer()
        let dead = "http://127.0.0.1:\(NodeProcess.freePort())"
        let client = EtcdClient(endpoints: [dead, etcd.clientURL])
        defer { Task { await client.shutdown() } }
        try await client.put("/t/x", [1])
        #expect(try await client.get("/t/x").value?.value == [1])

        let nobody = EtcdClient(endpoints: [dead], requestTimeout: .seconds(1))
        defer { Task { await nobody.shutdown() } }
        do {
            _ = try await nobody.get("/t/x")
            Issue.record("a get with no etcd answering succeeded")
        } catch let error as CoordinationError {
            #expect(error.isTransient, "\(error)")
        }
    }

    @Test func etcdsRefusalsAreReportedNotRetried() async throws {
        let etcd = try await EtcdServer()
        let client = EtcdClient(endpoints: [etcd.clientURL])
        defer { Task { await client.shutdown() } }
        do {
            try await client.put("/t/x", [1], lease: 123_456_789)  // no such lease
            Issue.record("a put under an unknown lease succeeded")
        } catch let error as CoordinationError {
            guard case .refused(let why) = error else {
                Issue.record("expected a refusal, got \(error)")
                return
            }
            #expect(why.contains("lease not found"), "\(why)")
        }
    }

    @Test func gatewayLinesAreSplitAcrossChunks() throws {
        var lines = JSONLines()
        lines.append(Array("{\"a\":1}\n{\"b\"".utf8))
        #expect(try lines.next() == Data("{\"a\":1}".utf8))
        #expect(try lines.next() == nil)
        lines.append(Array(":2}\n\n \r\n".utf8))
        #expect(try lines.next() == Data("{\"b\":2}".utf8))
        #expect(try lines.next() == nil, "blank lines are skipped")
    }

    @Test func aPrefixsRangeEndsAfterEveryKeyItStarts() {
        #expect(EtcdClient.prefixEnd(Array("/a/".utf8)) == Array("/a0".utf8))
        #expect(EtcdClient.prefixEnd([0x61, 0xFF]) == [0x62])
        #expect(EtcdClient.prefixEnd([0xFF]) == [0])
    }
}

/// `body`'s value, or a failure after `timeout`.
func withDeadline<T: Sendable>(_ timeout: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        guard let first = try await group.next(), let value = first else {
            group.cancelAll()
            throw TestFailure("no answer within \(timeout)")
        }
        group.cancelAll()
        return value
    }
}
