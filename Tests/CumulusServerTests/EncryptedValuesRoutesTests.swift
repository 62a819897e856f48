import CumulusEngine
import CumulusModel
import CumulusServer
import Foundation
import HummingbirdTesting
import Logging
import Testing

/// Values of the encrypted key space on the wire: `ENCRYPTED_BYTES` (and `ENCRYPTED_`
/// before any other type) among the record's `fields`, stored and returned untouched.
@Suite("Encrypted values on the wire")
struct EncryptedValuesRoutesTests {
    /// 300 bytes no text encoding would survive: every byte value, and more.
    static let ciphertext = (0..<300).map { UInt8(($0 * 7 + 3) % 256) }
    static var base64: String { Data(ciphertext).base64EncodedString() }

    static func save(_ fields: String, name: String = "diary", type: String = "forceReplace") -> String {
        #"{"operations":[{"operationType":"\#(type)","record":{"recordName":"\#(name)","recordType":"Diary","fields":\#(fields)}}]}"#
    }

    @Test("an ENCRYPTED_BYTES field is saved and returned byte for byte, in lookups, queries' records and changes")
    func roundTrip() async throws {
        let world = try APIWorld()
        let saved = try await world.post(
            "records/modify",
            Self.save(#"{"title":{"value":"Monday"},"entry":{"value":"\#(Self.base64)","type":"ENCRYPTED_BYTES"}}"#))
        #expect(saved.status == 200, "\(saved.json)")
        #expect(saved.json["records"]?[0]?["fields"]?["entry"] == ["value": .string(Self.base64), "type": "ENCRYPTED_BYTES"])
        // Stored in the encrypted key space, as bytes; the plain field beside it.
        let stored = try world.container.privateDatabase(container: APIWorld.containerName, user: world.alice)
            .fetch(RecordID(recordName: "diary"), as: world.alice)
        #expect(stored[encrypted: "entry"] == .bytes(Self.ciphertext) && stored["entry"] == nil)
        #expect(stored["title"] == .string("Monday"))

        let lookup = try await world.post("records/lookup", #"{"records":[{"recordName":"diary"}]}"#)
        #expect(lookup.json["records"]?[0]?["fields"]?["entry"]?["value"]?.stringValue == Self.base64)
        #expect(lookup.json["records"]?[0]?["fields"]?["entry"]?["type"]?.stringValue == "ENCRYPTED_BYTES")
        let changes = try await world.post("records/changes", #"{"zoneID":{"zoneName":"_defaultZone"}}"#)
        #expect(changes.json["records"]?[0]?["fields"]?["entry"]?["value"]?.stringValue == Self.base64)

        // Other types in the encrypted space keep their own form; a null value removes one.
        let other = try await world.post(
            "records/modify",
            Self.save(#"{"mood":{"value":["calm","tired"],"type":"encrypted_string_list"},"entry":{"value":null,"type":"ENCRYPTED_BYTES"}}"#, type: "forceUpdate"))
        #expect(other.status == 200, "\(other.json)")
        let fields = other.json["records"]?[0]?["fields"]
        #expect(fields?["mood"] == ["value": ["calm", "tired"], "type": "ENCRYPTED_STRING_LIST"])
        #expect(fields?["entry"] == nil, "removed")
        #expect(fields?["title"]?["value"] == "Monday")
    }

    @Test("refused: in the public database, references and assets, a value that is not of its type, a key both plain and encrypted")
    func refusals() async throws {
        let world = try APIWorld()
        let encrypted = #"{"entry":{"value":"\#(Self.base64)","type":"ENCRYPTED_BYTES"}}"#
        let cases: [(String, String)] = [
            ("public", Self.save(encrypted)),
            ("private", Self.save(#"{"link":{"value":{"recordName":"other","action":"NONE"},"type":"ENCRYPTED_REFERENCE"}}"#)),
            ("private", Self.save(#"{"entry":{"value":12,"type":"ENCRYPTED_BYTES"}}"#)),
            ("private", Self.save(#"{"entry":{"value":"%%% not base64","type":"ENCRYPTED_BYTES"}}"#)),
            ("private", Self.save(#"{"entry":{"value":"x","type":"ENCRYPTED_NOTHING"}}"#)),
        ]
        for (database, body) in cases {
            let answer = try await world.post("records/modify", body, database: database)
            let code = answer.json["records"]?[0]?["serverErrorCode"]?.stringValue ?? answer.json["serverErrorCode"]?.stringValue
            #expect(code == "BAD_REQUEST", "\(database) \(body): \(answer.json)")
        }
        // Nothing of them was stored.
        let lookup = try await world.post("records/lookup", #"{"records":[{"recordName":"diary"}]}"#)
        #expect(lookup.json["records"]?[0]?["serverErrorCode"]?.stringValue == "NOT_FOUND")
    }

    @Test("over a real socket: the bytes come back as they went")
    func overASocket() async throws {
        let world = try APIWorld()
        let app = CumulusHTTPServer.application(api: world.api, logger: Logger(label: "test"))
        let query = "ckAPIToken=\(world.apiToken)&ckWebAuthToken=\(world.aliceToken)"
        let base = "/database/1/\(APIWorld.containerName)/development/private/"
        try await app.testLive { client in
            try await client.execute(
                uri: base + "records/modify?\(query)", method: .post,
                body: .init(string: Self.save(#"{"entry":{"value":"\#(Self.base64)","type":"ENCRYPTED_BYTES"}}"#))
            ) { response in
                #expect(response.status == .ok)
            }
            try await client.execute(
                uri: base + "records/lookup?\(query)", method: .post, body: .init(string: #"{"records":[{"recordName":"diary"}]}"#)
            ) { response in
                let json = try JSONValue.parse(Data(response.body.readableBytesView))
                let value = json["records"]?[0]?["fields"]?["entry"]?["value"]?.stringValue
                #expect(value.flatMap { Data(base64Encoded: $0) }.map { Array($0) } == Self.ciphertext)
            }
        }
    }
}
