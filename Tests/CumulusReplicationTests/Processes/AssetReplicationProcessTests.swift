import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// Assets on followers (issue 17): a follower fetches the files a frame's records
/// refer to before it applies the frame, and a follower seeded from a snapshot fetches
/// those of the snapshot before it serves; each serves downloads from its own store.
@Suite("Asset replication, as processes")
struct AssetReplicationProcessTests {
    static let photo = (0..<200_000).map { UInt8(($0 * 13 + 5) % 256) }

    /// POSTs raw `bytes` to `url`; the answer.
    static func post(_ bytes: [UInt8], to url: String) async throws -> TestHTTP.Answer {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.body = .bytes(ByteBuffer(bytes: bytes))
        let response = try await TestHTTP.client.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        return TestHTTP.Answer(status: Int(response.status.code), headers: [:], body: Array(body.readableBytesView))
    }

    /// The bytes behind the `downloadURL` of record `name`'s `image`, read from `node`
    /// once it holds commit `sequence`.
    static func download(_ name: String, from node: NodeProcess, cluster: Cluster, sequence: String) async throws -> [UInt8] {
        let lookup = try await TestHTTP.readWhenCaughtUp(
            cluster.privateURL(node, "records/lookup"), body: ["records": [["recordName": name]]], minSequence: sequence)
        let records = lookup.json["records"] as? [[String: Any]]
        let image = (records?.first?["fields"] as? [String: Any])?["image"] as? [String: Any]
        let url = try #require((image?["value"] as? [String: Any])?["downloadURL"] as? String, "\(lookup.text)")
        #expect(url.hasPrefix(node.url), "served by the node asked: \(url)")
        let answer = try await TestHTTP.request(url)
        #expect(answer.status == 200, "\(answer.text.prefix(300))")
        return answer.body
    }

    @Test("a streaming follower and a snapshot-seeded one each serve the asset's download from their own store")
    func followersServeAssets() async throws {
        let cluster = try Cluster()
        let (leader, follower) = try await cluster.startPair()
        let tokens = try await TestHTTP.request(
            cluster.privateURL(leader, "assets/upload"), method: .POST,
            body: ["tokens": [["recordName": "p", "recordType": "Photo", "fieldName": "image"]]])
        let url = try #require(((tokens.json["tokens"] as? [[String: Any]])?.first?["url"] as? String), "\(tokens.text)")
        let uploaded = try await Self.post(Self.photo, to: url)
        #expect(uploaded.status == 200, "\(uploaded.text)")
        let singleFile = try #require(uploaded.json["singleFile"] as? [String: Any])
        let saved = try await cluster.modify(
            "forceReplace",
            ["recordName": "p", "recordType": "Photo", "fields": ["image": ["value": singleFile, "type": "ASSETID"]]],
            on: leader)
        #expect(saved.status == 200 && !saved.text.contains("serverErrorCode"), "\(saved.text)")
        let sequence = try #require(saved.headers["x-cumulus-sequence"])

        #expect(try await Self.download("p", from: follower, cluster: cluster, sequence: sequence) == Self.photo)
        let checksum = try #require(singleFile["fileChecksum"] as? String)
        let copy = cluster.path("follower") + "/assets/" + checksum.prefix(2) + "/" + checksum
        #expect(FileManager.default.fileExists(atPath: copy), "the follower holds its own copy")

        // A follower hands out no upload URLs: they would not work there.
        let refused = try await TestHTTP.request(
            cluster.privateURL(follower, "assets/upload"), method: .POST,
            body: ["tokens": [["recordName": "q", "recordType": "Photo", "fieldName": "image"]]])
        #expect(refused.json["serverErrorCode"] as? String == "NOT_LEADER", "\(refused.text)")
        #expect(refused.json["leaderURL"] as? String == leader.url, "\(refused.text)")

        let seeded = cluster.follower("seeded", of: leader.url)
        try seeded.start()
        try await TestHTTP.waitUntilUp(seeded.url)
        #expect(try await Self.download("p", from: seeded, cluster: cluster, sequence: sequence) == Self.photo)
        for node in [leader, follower, seeded] { #expect(node.stop() == 0, "\(node.stderr.suffix(2000))") }
    }

    /// Uploads `bytes` through `node` as `Photo.image` of `name` and saves the record; the file's checksum.
    static func uploadAndSave(_ bytes: [UInt8], as name: String, on node: NodeProcess, cluster: Cluster) async throws -> String {
        let tokens = try await TestHTTP.request(
            cluster.privateURL(node, "assets/upload"), method: .POST,
            body: ["tokens": [["recordName": name, "recordType": "Photo", "fieldName": "image"]]])
        let url = try #require(((tokens.json["tokens"] as? [[String: Any]])?.first?["url"] as? String), "\(tokens.text)")
        let singleFile = try #require(try await post(bytes, to: url).json["singleFile"] as? [String: Any])
        let saved = try await cluster.modify(
            "forceReplace",
            ["recordName": name, "recordType": "Photo", "fields": ["image": ["value": singleFile, "type": "ASSETID"]]],
            on: node)
        #expect(saved.status == 200 && !saved.text.contains("serverErrorCode"), "\(saved.text)")
        return try #require(singleFile["fileChecksum"] as? String)
    }

    @Test("serve collects in the background: a file only an old version held goes once --retain-commits drops that version; a current one stays")
    func serveCollectsWhatRetentionReleases() async throws {
        let cluster = try Cluster()
        let leader = try await cluster.startLeader(
            "leader", extra: [
                "--retain-commits", "3", "--retain-follower-grace", "1", "--asset-collect-interval", "1",
                // Long enough for an upload's save to land on a loaded machine: with no grace
                // a round between the upload and the save deletes the file, as it should.
                "--asset-grace", "15",
            ])
        let old = try await Self.uploadAndSave(Array(Self.photo.prefix(1_000)), as: "p", on: leader, cluster: cluster)
        let current = try await Self.uploadAndSave(Array(Self.photo.suffix(1_000)), as: "p", on: leader, cluster: cluster)
        func file(_ checksum: String) -> String { cluster.path("leader") + "/assets/" + checksum.prefix(2) + "/" + checksum }
        // More commits than retention keeps, so the one that saved the old version is dropped.
        for index in 0..<5 { _ = try await cluster.save("filler\(index)", value: index, on: leader) }
        try await waitUntil("the old version's file is collected", timeout: .seconds(120)) { !FileManager.default.fileExists(atPath: file(old)) }
        #expect(FileManager.default.fileExists(atPath: file(current)), "the current record holds it")
        #expect(leader.stop() == 0, "\(leader.stderr.suffix(2000))")
    }
}
