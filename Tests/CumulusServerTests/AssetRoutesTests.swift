@testable import CumulusEngine
import CumulusModel
import CumulusServer
import CumulusTestSupport
import Crypto
import Foundation
import HummingbirdTesting
import Logging
import NIOCore
import Testing

/// Assets over the wire (`Docs/HTTP-API.md`, "Assets"): upload URLs,
/// the upload answering a receipt, the save carrying it, `downloadURL`s in records read
/// back, and every refusal with its code.
@Suite("Assets on the wire")
struct AssetRoutesTests {
    /// Bytes no text encoding would survive.
    static let photo = (0..<70_000).map { UInt8(($0 * 31 + 7) % 256) }

    /// An upload URL for `Photo.image` (record `name`), as alice unless `token` says.
    static func uploadURL(_ world: APIWorld, name: String = "p", token: String?? = nil) async throws -> String {
        let answer = try await world.post(
            "assets/upload", #"{"tokens":[{"recordName":"\#(name)","recordType":"Photo","fieldName":"image"}]}"#, token: token)
        #expect(answer.status == 200, "\(answer.json)")
        return try #require(answer.json["tokens"]?[0]?["url"]?.stringValue)
    }

    /// The ticket of an upload or download URL: what follows its route.
    static func ticket(_ url: String, after route: String) throws -> String {
        let range = try #require(url.range(of: route))
        return String(url[range.upperBound...])
    }

    /// POSTs `bytes` to `url` in process, in chunks of 10,000 bytes; the answer.
    static func upload(_ world: APIWorld, _ bytes: [UInt8], to url: String, declare: Bool = true) async throws
        -> (status: Int, json: JSONValue)
    {
        var chunks = stride(from: 0, to: bytes.count, by: 10_000).map { Array(bytes[$0..<min(bytes.count, $0 + 10_000)]) }
        chunks.reverse()
        let response = await world.api.uploadAsset(
            ticket: try ticket(url, after: Route.assetUploadPath), declaredLength: declare ? bytes.count : nil
        ) { chunks.popLast() }
        return (response.status, try JSONValue.parse(Data(response.bodyBytes())))
    }

    /// A `records/modify` body saving record `name` of type Photo with `image` = `asset`.
    static func save(_ asset: JSONValue, name: String = "p", type: String = "forceReplace") throws -> String {
        let value = String(decoding: try asset.serialized(), as: UTF8.self)
        return #"{"operations":[{"operationType":"\#(type)","record":{"recordName":"\#(name)","recordType":"Photo","fields":{"image":{"value":\#(value),"type":"ASSETID"}}}}]}"#
    }

    @Test("the two-step flow over a socket: an upload URL, the bytes, a save with the receipt, a lookup's downloadURL serving the same bytes")
    func twoStepRoundTrip() async throws {
        let world = try APIWorld()
        let app = CumulusHTTPServer.application(api: world.api, logger: Logger(label: "test"))
        let credentials = "ckAPIToken=\(world.apiToken)&ckWebAuthToken=\(world.aliceToken)"
        let base = "/database/1/\(APIWorld.containerName)/development/private"
        try await app.testLive { client in
            var uploadPath = ""
            try await client.execute(
                uri: "\(base)/assets/upload?\(credentials)", method: .post,
                body: ByteBuffer(string: #"{"tokens":[{"recordName":"p","recordType":"Photo","fieldName":"image"}]}"#)
            ) { response in
                #expect(response.status == .ok)
                let json = try JSONValue.parse(Data(response.body.readableBytesView))
                #expect(json["tokens"]?[0]?["recordName"] == "p" && json["tokens"]?[0]?["fieldName"] == "image")
                let url = try #require(json["tokens"]?[0]?["url"]?.stringValue)
                #expect(url.hasPrefix("http://") && url.contains("/assets/upload/"), "an absolute URL: \(url)")
                uploadPath = try #require(URL(string: url)?.path)
            }
            var singleFile: JSONValue = .null
            try await client.execute(uri: uploadPath, method: .post, body: ByteBuffer(bytes: Self.photo)) { response in
                #expect(response.status == .ok)
                let json = try JSONValue.parse(Data(response.body.readableBytesView))
                singleFile = try #require(json["singleFile"])
            }
            #expect(singleFile["fileChecksum"]?.stringValue == Hex.encode(Array(SHA256.hash(data: Self.photo))))
            #expect(singleFile["size"] == .int(Int64(Self.photo.count)))
            #expect(singleFile["receipt"]?.stringValue?.isEmpty == false)
            try await client.execute(
                uri: "\(base)/records/modify?\(credentials)", method: .post, body: ByteBuffer(string: try Self.save(singleFile))
            ) { response in
                let json = try JSONValue.parse(Data(response.body.readableBytesView))
                #expect(json["records"]?[0]?["recordChangeTag"] != nil, "\(json)")
            }
            var downloadPath = ""
            try await client.execute(
                uri: "\(base)/records/lookup?\(credentials)", method: .post, body: ByteBuffer(string: #"{"records":[{"recordName":"p"}]}"#)
            ) { response in
                let json = try JSONValue.parse(Data(response.body.readableBytesView))
                let image = json["records"]?[0]?["fields"]?["image"]
                #expect(image?["type"] == "ASSETID")
                #expect(image?["value"]?["fileChecksum"] == singleFile["fileChecksum"])
                #expect(image?["value"]?["receipt"] == nil, "a receipt is a one-time proof, not stored")
                let url = try #require(image?["value"]?["downloadURL"]?.stringValue)
                downloadPath = try #require(URL(string: url)?.path)
            }
            try await client.execute(uri: downloadPath, method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "application/octet-stream")
                #expect(response.headers[.contentLength] == String(Self.photo.count))
                #expect(Array(response.body.readableBytesView) == Self.photo)
                // A download URL is a bearer credential that outlives a loss of access
                // only briefly (issue 40): minutes, and caches keep it no longer.
                #expect(response.headers[.cacheControl] == "private, max-age=300, immutable")
            }
            try await client.execute(uri: downloadPath, method: .head) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentLength] == String(Self.photo.count))
            }
        }
        // The URLs name the host the client asked for (its Host header).
        let asked = await world.api.handle(APIRequest(
            method: "POST", path: "\(base)/assets/upload",
            query: ["ckAPIToken": world.apiToken, "ckWebAuthToken": world.aliceToken],
            headers: ["host": "cumulus.example:8765"],
            body: Array(#"{"tokens":[{"recordType":"Photo","fieldName":"image"}]}"#.utf8)))
        let url = try JSONValue.parse(Data(asked.bodyBytes()))["tokens"]?[0]?["url"]?.stringValue
        #expect(url?.hasPrefix("http://cumulus.example:8765/assets/upload/") == true, "\(url ?? "none")")
        let stored = try world.container.privateDatabase(container: APIWorld.containerName, user: world.alice)
            .fetch(RecordID(recordName: "p"), as: world.alice)
        guard case .asset(let asset)? = stored["image"] else {
            Issue.record("no asset stored")
            return
        }
        #expect(asset.receipt == nil && asset.wrappingKey == nil && asset.size == Int64(Self.photo.count))
    }

    @Test("an ASSET_LIST field takes each element's receipt and reads back with a downloadURL per element")
    func assetLists() async throws {
        let world = try APIWorld()
        var files: [JSONValue] = []
        for part in [Array(Self.photo.prefix(100)), Array(Self.photo.suffix(100))] {
            let uploaded = try await Self.upload(world, part, to: try await Self.uploadURL(world))
            files.append(try #require(uploaded.json["singleFile"]))
        }
        let value = String(decoding: try JSONValue.array(files).serialized(), as: UTF8.self)
        let saved = try await world.post("records/modify", """
            {"operations":[{"operationType":"create","record":{"recordName":"g","recordType":"Album",
            "fields":{"pages":{"value":\(value),"type":"ASSET_LIST"}}}}]}
            """)
        #expect(saved.json["records"]?[0]?["recordChangeTag"] != nil, "\(saved.json)")
        let read = try await world.post("records/lookup", #"{"records":[{"recordName":"g"}]}"#)
        let pages = try #require(read.json["records"]?[0]?["fields"]?["pages"])
        #expect(pages["type"] == "ASSET_LIST")
        for index in 0..<2 {
            #expect(pages["value"]?[index]?["fileChecksum"] == files[index]["fileChecksum"])
            #expect(pages["value"]?[index]?["downloadURL"]?.stringValue?.contains(Route.assetDownloadPath) == true)
            #expect(pages["value"]?[index]?["receipt"] == nil)
        }
    }

    @Test("the same bytes uploaded twice are stored once, under their SHA-256")
    func sameBytesStoredOnce() async throws {
        let world = try APIWorld()
        let first = try await Self.upload(world, Self.photo, to: try await Self.uploadURL(world, name: "a"))
        let second = try await Self.upload(world, Self.photo, to: try await Self.uploadURL(world, name: "b"))
        #expect(first.status == 200 && second.status == 200)
        #expect(first.json["singleFile"]?["fileChecksum"] == second.json["singleFile"]?["fileChecksum"])
        let stored = try world.container.assets.storedChecksums()
        #expect(stored.count == 1)
        #expect(stored.first?.hex == first.json["singleFile"]?["fileChecksum"]?.stringValue)
        let incoming = try FileManager.default.contentsOfDirectory(atPath: world.container.assets.root + "/incoming")
        #expect(incoming.isEmpty, "the second copy was deleted, not left behind")
    }

    @Test("a save refuses a forged, expired, another user's or another file's receipt, and an asset without one the record never held; accepts a fetched asset sent back")
    func receiptsAreChecked() async throws {
        let world = try APIWorld()
        let uploaded = try await Self.upload(world, Self.photo, to: try await Self.uploadURL(world))
        let singleFile = try #require(uploaded.json["singleFile"])
        let checksum = try #require(singleFile["fileChecksum"]?.stringValue)
        func with(_ receipt: JSONValue) -> JSONValue {
            guard case .object(var members) = singleFile else { return singleFile }
            members["receipt"] = receipt
            return .object(members)
        }
        let secret = world.container.secret
        let database = DatabaseID(container: APIWorld.containerName, scope: .private, owner: world.alice)
        let digest = try #require(AssetChecksum(hex: checksum))
        let expired = AssetReceipt(
            checksum: digest, size: Int64(Self.photo.count), database: database, user: world.alice,
            expires: Timestamp(millisecondsSince1970: Timestamp.now().millisecondsSince1970 - 1)
        ).sealed(secret: secret)
        let bobs = AssetReceipt(
            checksum: digest, size: Int64(Self.photo.count), database: database, user: world.bob,
            expires: Timestamp.now().adding(.seconds(600))
        ).sealed(secret: secret)
        let otherFile = AssetReceipt(
            checksum: try #require(AssetChecksum(hex: String(repeating: "ab", count: 32))), size: Int64(Self.photo.count),
            database: database, user: world.alice, expires: Timestamp.now().adding(.seconds(600))
        ).sealed(secret: secret)
        let uploadTicketAsReceipt = try Self.ticket(try await Self.uploadURL(world), after: Route.assetUploadPath)
        let cases: [(String, JSONValue, String)] = [
            ("forged", with("AAAAbm90IGEgcmVjZWlwdA"), "damaged, forged"),
            ("expired", with(.string(expired)), "expired"),
            ("bob's", with(.string(bobs)), "another user"),
            ("another file's", with(.string(otherFile)), "must be those of its receipt"),
            ("an upload URL's ticket", with(.string(uploadTicketAsReceipt)), "is not an asset receipt"),
            ("none, never held", with(.null), "has no receipt"),
        ]
        for (label, asset, reason) in cases {
            let answer = try await world.post("records/modify", try Self.save(asset))
            #expect(answer.status == 200, "\(label)")
            #expect(answer.json["records"]?[0]?["serverErrorCode"] == "BAD_REQUEST", "\(label): \(answer.json)")
            #expect(answer.json["records"]?[0]?["reason"]?.stringValue?.contains(reason) == true, "\(label): \(answer.json)")
        }
        // Bob cannot use alice's receipt in his own database either.
        let bobsSave = try await world.post("records/modify", try Self.save(singleFile), token: .some(world.bobToken))
        #expect(bobsSave.json["records"]?[0]?["serverErrorCode"] == "BAD_REQUEST", "\(bobsSave.json)")

        let saved = try await world.post("records/modify", try Self.save(singleFile))
        let tag = try #require(saved.json["records"]?[0]?["recordChangeTag"]?.stringValue, "\(saved.json)")
        // The record as fetched (no receipt, a downloadURL) sent back with an update.
        let fetched = try await world.post("records/lookup", #"{"records":[{"recordName":"p"}]}"#)
        let asFetched = try #require(fetched.json["records"]?[0]?["fields"]?["image"]?["value"])
        #expect(asFetched["receipt"] == nil && asFetched["downloadURL"] != nil)
        let value = String(decoding: try asFetched.serialized(), as: UTF8.self)
        let update = try await world.post("records/modify", """
            {"operations":[{"operationType":"update","record":{"recordName":"p","recordType":"Photo","recordChangeTag":"\(tag)",
            "fields":{"image":{"value":\(value)},"caption":{"value":"sea"}}}}]}
            """)
        #expect(update.json["records"]?[0]?["fields"]?["caption"]?["value"] == "sea", "\(update.json)")
        // A receipt whose file is gone: the file is named in the error.
        try FileManager.default.removeItem(atPath: world.container.assets.path(of: digest))
        let lost = try await world.post("records/modify", try Self.save(singleFile, name: "q"))
        #expect(lost.json["records"]?[0]?["serverErrorCode"] == "NOT_FOUND", "\(lost.json)")
        #expect(lost.json["records"]?[0]?["reason"]?.stringValue?.contains(checksum) == true)
    }

    @Test("an upload past --max-asset-bytes is LIMIT_EXCEEDED, by its declared length or at the first byte over, and nothing is kept")
    func oversizedUploadsRefused() async throws {
        let world = try APIWorld()
        var api = world.api
        api.limits.assetBytes = 1_000
        let bytes = [UInt8](repeating: 7, count: 1_001)
        for declare in [true, false] {
            let ticket = try Self.ticket(try await Self.uploadURL(world), after: Route.assetUploadPath)
            var chunks = [Array(bytes[600...]), Array(bytes[..<600])]
            let response = await api.uploadAsset(ticket: ticket, declaredLength: declare ? bytes.count : nil) { chunks.popLast() }
            let json = try JSONValue.parse(Data(response.bodyBytes()))
            #expect(response.status == 400 && json["serverErrorCode"] == "LIMIT_EXCEEDED", "\(json)")
            #expect(json["reason"]?.stringValue?.contains("1000") == true)
        }
        #expect(try world.container.assets.storedChecksums().isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: world.container.assets.root + "/incoming").isEmpty)
        let ticket = try Self.ticket(try await Self.uploadURL(world), after: Route.assetUploadPath)
        var chunks = [Array(bytes[1...])]
        let fits = await api.uploadAsset(ticket: ticket, declaredLength: nil) { chunks.popLast() }
        #expect(fits.status == 200)
    }

    @Test("bad asset requests get a clear error with a Cumulus error code and nothing crashes")
    func badRequests() async throws {
        let world = try APIWorld()
        let tokens201 = (0...200).map { _ in #"{"recordType":"Photo","fieldName":"image"}"# }.joined(separator: ",")
        let cases: [(String, String?, String, String)] = [
            (#"{"tokens":"image"}"#, nil, "BAD_REQUEST", "'tokens' must be a list"),
            (#"{"tokens":[42]}"#, nil, "BAD_REQUEST", "must be an object"),
            (#"{"tokens":[{"recordType":"Photo"}]}"#, nil, "BAD_REQUEST", "'fieldName'"),
            (#"{"tokens":[{"fieldName":"image"}]}"#, nil, "BAD_REQUEST", "'recordType'"),
            (#"{"tokens":[{"recordType":"Photo","fieldName":"_secret"}]}"#, nil, "BAD_REQUEST", "_secret"),
            (#"{"tokens":[{"recordType":"Photo","fieldName":"image","recordName":7}]}"#, nil, "BAD_REQUEST", "recordName"),
            (#"{"tokens":[\#(tokens201)]}"#, nil, "LIMIT_EXCEEDED", "201 tokens"),
            (#"{"tokens":[{"recordType":"Photo","fieldName":"image"}]}"#, "public-anonymous", "AUTHENTICATION_REQUIRED", "sign in"),
        ]
        for (body, mode, code, reason) in cases {
            let answer = mode == nil
                ? try await world.post("assets/upload", body)
                : try await world.post("assets/upload", body, database: "public", token: .some(nil))
            #expect(answer.json["serverErrorCode"]?.stringValue == code, "\(body.prefix(80)): \(answer.json)")
            #expect(answer.json["reason"]?.stringValue?.contains(reason) == true, "\(body.prefix(80)): \(answer.json)")
        }
        // Upload and download URLs that are not ours, or not of their kind.
        let upload = try Self.ticket(try await Self.uploadURL(world), after: Route.assetUploadPath)
        for bad in ["", "garbage", "%%%", String(repeating: "A", count: 5_000), String(upload.dropLast(2))] {
            var none: [[UInt8]] = [[1, 2, 3]]
            let response = await world.api.uploadAsset(ticket: bad, declaredLength: 3) { none.popLast() }
            let json = try JSONValue.parse(Data(response.bodyBytes()))
            #expect(response.status == 400 && json["serverErrorCode"] == "BAD_REQUEST", "\(bad.prefix(20)): \(json)")
            #expect(throws: CumulusError.self) { try world.api.downloadableAsset(ticket: bad) }
        }
        #expect(throws: CumulusError.self) { try world.api.downloadableAsset(ticket: upload) }
        // A download URL for a file this node does not hold: NOT_FOUND, over HTTP too.
        let missing = try #require(world.container.downloadToken(
            for: Asset(fileChecksum: String(repeating: "cd", count: 32), size: 1),
            in: DatabaseID(container: APIWorld.containerName, scope: .private, owner: world.alice)))
        let app = CumulusHTTPServer.application(api: world.api, logger: Logger(label: "test"))
        try await app.testLive { client in
            try await client.execute(uri: Route.assetDownloadPath + missing, method: .get) { response in
                #expect(response.status == .notFound)
                let json = try JSONValue.parse(Data(response.body.readableBytesView))
                #expect(json["serverErrorCode"] == "NOT_FOUND")
            }
            try await client.execute(uri: Route.assetDownloadPath + "nonsense", method: .get) { response in
                #expect(response.status == .badRequest)
            }
            try await client.execute(uri: Route.assetUploadPath + upload, method: .get) { response in
                #expect(response.status == .notFound, "upload URLs take POST")
            }
        }
    }

    @Test("2,000 mutated upload URLs, download URLs and receipts are each refused with BAD_REQUEST; nothing is stored")
    func mutatedTokensRefused() async throws {
        let world = try APIWorld()
        let upload = try Self.ticket(try await Self.uploadURL(world), after: Route.assetUploadPath)
        let uploaded = try await Self.upload(world, Self.photo, to: try await Self.uploadURL(world))
        let receipt = try #require(uploaded.json["singleFile"]?["receipt"]?.stringValue)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=+/%".utf8)
        var generator = RandomRecords(seed: 0xA55E7)
        func mutated(_ text: String) -> String {
            var bytes = Array(text.utf8)
            for _ in 0..<generator.int(1...3) where !bytes.isEmpty {
                switch generator.int(0...2) {
                case 0: bytes[generator.int(0...bytes.count - 1)] = alphabet[generator.int(0...alphabet.count - 1)]
                case 1: bytes.remove(at: generator.int(0...bytes.count - 1))
                default: bytes.insert(alphabet[generator.int(0...alphabet.count - 1)], at: generator.int(0...bytes.count))
                }
            }
            return String(decoding: bytes, as: UTF8.self)
        }
        for round in 0..<2_000 {
            if round % 50 == 0 { await Task.yield() }  // refusals never suspend: let other tests run
            let bad = mutated(round % 2 == 0 ? upload : receipt)
            guard bad != upload else { continue }
            var none: [[UInt8]] = [[1, 2, 3]]
            let response = await world.api.uploadAsset(ticket: bad, declaredLength: 3) { none.popLast() }
            let json = try JSONValue.parse(Data(response.bodyBytes()))
            #expect(response.status == 400 && json["serverErrorCode"] == "BAD_REQUEST", "\(bad): \(json)")
            #expect(throws: CumulusError.self) { try world.api.downloadableAsset(ticket: bad) }
        }
        #expect(try world.container.assets.storedChecksums().count == 1, "only the one real upload")
    }

    @Test("in production an upload URL is only for a declared ASSET field")
    func productionFieldsMustBeDeclaredAssets() async throws {
        let world = try APIWorld()
        let schema = """
            DEFINE SCHEMA
                RECORD TYPE Photo (
                    "___recordID" REFERENCE QUERYABLE,
                    image ASSET,
                    caption STRING
                );
            """
        _ = try await world.container.importSchema(
            schema, into: SchemaID(container: APIWorld.containerName, environment: .development))
        _ = try await world.container.deploySchema(container: APIWorld.containerName)
        for (field, code) in [("image", nil), ("caption", "BAD_REQUEST"), ("nothing", "BAD_REQUEST")] {
            let answer = try await world.post(
                "assets/upload", #"{"tokens":[{"recordType":"Photo","fieldName":"\#(field)"}]}"#, environment: "production")
            #expect(answer.json["serverErrorCode"]?.stringValue == code, "\(field): \(answer.json)")
        }
    }
}
