import CumulusEngine
import CumulusModel
import CumulusServer
import Foundation
import HummingbirdTesting
import Logging
import NIOCore
import Testing

/// What uploads may hold of the disk (issue 40, item 9), through a live socket: an
/// upload URL takes one file, and each user and each container may upload a quota of
/// bytes within the grace an unreferenced upload is kept.
@Suite("Upload quotas over HTTP")
struct UploadQuotaTests {
    /// An upload URL's path for record `name`, as `token`'s user.
    static func uploadPath(_ client: LiveClient, _ world: APIWorld, token: String, name: String) async throws
        -> String
    {
        let credentials = "ckAPIToken=\(world.apiToken)&ckWebAuthToken=\(token)"
        return try await client.execute(
            uri: "/database/1/\(APIWorld.containerName)/development/private/assets/upload?\(credentials)", method: .post,
            body: ByteBuffer(string: #"{"tokens":[{"recordName":"\#(name)","recordType":"Photo","fieldName":"image"}]}"#)
        ) { response in
            let json = try JSONValue.parse(Data(response.body.readableBytesView))
            let url = try #require(json["tokens"]?[0]?["url"]?.stringValue, "\(json)")
            return try #require(URL(string: url)?.path)
        }
    }

    /// POSTs `bytes` to an upload path: the status and the error code, if any.
    static func post(_ client: LiveClient, _ path: String, _ bytes: [UInt8]) async throws -> (Int, String?) {
        try await client.execute(uri: path, method: .post, body: ByteBuffer(bytes: bytes)) { response in
            let json = try JSONValue.parse(Data(response.body.readableBytesView))
            return (Int(response.status.code), json["serverErrorCode"]?.stringValue)
        }
    }

    static func file(_ seed: Int) -> [UInt8] { (0..<10_000).map { UInt8(($0 &* 31 &+ seed) % 256) } }

    @Test("one upload URL takes one file: a second one, even of other bytes, is BAD_REQUEST and not kept")
    func uploadURLsTakeOneFile() async throws {
        let world = try APIWorld()
        let app = CumulusHTTPServer.application(api: world.api, logger: Logger(label: "test"))
        try await app.testLive { client in
            let path = try await Self.uploadPath(client, world, token: world.aliceToken, name: "p")
            let first = try await Self.post(client, path, Self.file(1))
            #expect(first.0 == 200)
            let again = try await Self.post(client, path, Self.file(2))
            #expect(again.0 == 400 && again.1 == "BAD_REQUEST", "\(again)")
            #expect(try world.container.assets.storedChecksums().count == 1)
        }
    }

    @Test("past a user's bytes in the window, QUOTA_EXCEEDED; another user goes on until the container's are spent")
    func uploadsHaveQuotas() async throws {
        let world = try APIWorld()
        var api = world.api
        api.limits.uploadQuota.bytesPerUser = 15_000
        api.limits.uploadQuota.bytesPerContainer = 20_000
        let app = CumulusHTTPServer.application(api: api, logger: Logger(label: "test"))
        try await app.testLive { client in
            // Alice: 10 KB, then 10 KB more (under 15 KB when it began), then refused.
            for (index, expected) in [(1, 200), (2, 200), (3, 413)] {
                let path = try await Self.uploadPath(client, world, token: world.aliceToken, name: "a\(index)")
                let answer = try await Self.post(client, path, Self.file(index))
                #expect(answer.0 == expected, "alice's upload \(index): \(answer)")
                if expected == 413 { #expect(answer.1 == "QUOTA_EXCEEDED") }
            }
            // Bob has a quota of his own, but the container's 20 KB are spent.
            let path = try await Self.uploadPath(client, world, token: world.bobToken, name: "b")
            let bobs = try await Self.post(client, path, Self.file(9))
            #expect(bobs.0 == 413 && bobs.1 == "QUOTA_EXCEEDED", "\(bobs)")
            #expect(try world.container.assets.storedChecksums().count == 2)
        }
    }
}
