import Foundation
import Testing

/// `--sync-replicas` with real processes: a leader acknowledges a write only once a
/// follower holds it.
@Suite struct SyncCommitProcessTests {
    @Test func aWriteIsAcknowledgedOnlyOnceTheFollowerHoldsIt() async throws {
        let cluster = try Cluster()
        let leader = try await cluster.startLeader(
            "leader", extra: ["--sync-replicas", "1", "--sync-timeout", "0.5"])
        let head = try #require(await TestHTTP.head(leader.url))

        // No follower yet: refused, and written nowhere.
        let alone = try await cluster.save("alone", value: 1, on: leader)
        #expect(alone.status == 503)
        #expect(alone.json["serverErrorCode"] as? String == "TRY_AGAIN_LATER")
        #expect((alone.json["reason"] as? String)?.contains("nothing was written") == true, "\(alone.text)")
        #expect(await TestHTTP.head(leader.url) == head)

        let follower = cluster.follower("follower", of: leader.url)
        try follower.start()
        try await TestHTTP.waitUntilUp(follower.url, timeout: .seconds(120))
        // Its stream open, writes go through; each acknowledged one is on the follower
        // by the time the leader answers.
        var confirmed = 0
        let deadline = ContinuousClock.now + .seconds(120)
        while confirmed < 20 && ContinuousClock.now < deadline {
            let answer = try await cluster.save("w\(confirmed)", value: confirmed, on: leader)
            guard answer.status == 200 else {
                try await Task.sleep(for: .milliseconds(50))
                continue
            }
            let sequence = try #require(answer.headers["x-cumulus-sequence"].flatMap(UInt64.init))
            let held = await TestHTTP.head(follower.url) ?? 0
            #expect(held >= sequence, "acknowledged commit \(sequence) while the follower held \(held)")
            confirmed += 1
        }
        #expect(confirmed == 20)
    }

    @Test func theOptionsAreChecked() async throws {
        let cluster = try Cluster()
        let secret = ["--replication-secret-file", cluster.secretFile]
        #expect(await cluster.refusal(["--sync-replicas", "1"])?.contains("--sync-replicas needs followers") == true)
        #expect(await cluster.refusal(secret + ["--sync-replicas", "65"])?.contains("between 0 and 64") == true)
        #expect(await cluster.refusal(secret + ["--sync-replicas", "1", "--sync-fallback", "maybe"])?.contains("fail or async") == true)
        #expect(await cluster.refusal(secret + ["--sync-replicas", "1", "--sync-timeout", "0"])?.contains("--sync-timeout") == true)
        #expect(await cluster.refusal(secret + ["--sync-replicas", "1", "--follow", "http://127.0.0.1:1"])?.contains("is for a leader") == true)
    }
}
