import CumulusModel
import CumulusServer
import Foundation
import HTTPTypes
import HummingbirdTesting
import Testing

/// CloudKit JS sends its JSON bodies as `Content-Type: text/plain` (so browsers send
/// them without a preflight), and some clients send no `Content-Type` at all (issue
/// 41, item 6; `Docs/HTTP-API.md`, "What clients send"). Through a live server's
/// socket, each is read exactly
/// as `application/json` is.
@Suite("JSON bodies whatever their content type")
struct PlainTextBodyTests {
    @Test("a save and a lookup answer the same with text/plain, no Content-Type, and application/json")
    func everyContentTypeIsJSON() async throws {
        let world = try APIWorld()
        try await LiveExchange.live(world) { client in
            let credentials = "?ckAPIToken=\(world.apiToken)&ckWebAuthToken=\(world.aliceToken)"
            let types: [(name: String, header: String?)] = [
                ("plain", "text/plain;charset=UTF-8"), ("none", nil), ("json", "application/json; charset=utf-8"),
            ]
            for type in types {
                let headers = type.header.map { ["Content-Type": $0] } ?? [:]
                let save = #"{"operations":[{"operationType":"create","record":{"recordName":"\#(type.name)","recordType":"Note","fields":{"title":{"value":"hi \#(type.name)"}}}}]}"#
                let saved = try await LiveExchange.send(
                    client, .post, LiveExchange.path("records/modify") + credentials, headers: headers, body: save)
                #expect(saved.status == .ok, "\(type.name): \(String(describing: saved.json))")
                #expect(saved.json?["records"]?[0]?["recordName"]?.stringValue == type.name, "\(String(describing: saved.json))")
                let looked = try await LiveExchange.send(
                    client, .post, LiveExchange.path("records/lookup") + credentials, headers: headers,
                    body: #"{"records":[{"recordName":"\#(type.name)"}]}"#)
                #expect(looked.json?["records"]?[0]?["fields"]?["title"]?["value"]?.stringValue == "hi \(type.name)", "\(String(describing: looked.json))")
            }
        }
    }
}
