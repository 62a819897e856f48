import CumulusModel
import CumulusServer
import Foundation

/// A CloudKit Web Services request as a client sends it: the input's first line is
/// the route under `/database/1/<container>/development/` (`private/records/modify`),
/// the rest the body. It goes through `CloudKitAPI.handle` of a live container with
/// a signed-in user, as the HTTP server hands it over.
///
/// The oracle (`Docs/DATA-MODEL.md`, "Errors"): every answer is a success or a client error (or
/// `TRY_AGAIN_LATER`), with a JSON body, and an error body names its code and reason.
/// A 500 means the server failed on input, which is a finding.
enum APIRequestTarget {
    static func run(_ input: [UInt8]) async -> FuzzOutcome {
        guard let world = FuzzWorld.next() else { return .broken("the fuzz world could not be created") }
        let route: String
        let body: [UInt8]
        if let newline = input.prefix(200).firstIndex(of: 0x0A) {
            route = String(decoding: input[..<newline], as: UTF8.self)
            body = Array(input[(newline + 1)...])
        } else {
            route = "private/records/modify"
            body = input
        }
        let response = await world.post(route, body)
        guard (200..<300).contains(response.status) || (400..<500).contains(response.status) || response.status == 503 else {
            return .broken("status \(response.status) for \(route): \(String(decoding: response.bodyBytes(), as: UTF8.self))")
        }
        if response.text != nil { return .accepted }
        guard let json = try? JSONValue.parse(Data(response.bodyBytes())) else {
            return .broken("the answer to \(route) is not JSON")
        }
        guard response.status >= 400 else { return .accepted }
        guard let code = json["serverErrorCode"]?.stringValue, json["reason"]?.stringValue != nil else {
            return .broken("error \(response.status) for \(route) without serverErrorCode and reason")
        }
        return .refused(code)
    }

    /// One valid request per route that takes a body, in the order a client would
    /// send them (the zone first).
    static func seeds() -> [[UInt8]] {
        let requests: [(String, String)] = [
            ("private/zones/modify", #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"Lists"}}}]}"#),
            ("private/records/modify", #"{"zoneID":{"zoneName":"Lists"},"atomic":false,"operations":[{"operationType":"create","record":{"recordName":"a","recordType":"T","fields":{"n":{"value":1},"s":{"value":"x y","type":"STRING"},"l":{"value":[1,2],"type":"INT64_LIST"},"r":{"value":{"recordName":"b","action":"DELETE_SELF"},"type":"REFERENCE"},"p":{"value":{"latitude":1.5,"longitude":2.5},"type":"LOCATION"}}}},{"operationType":"create","record":{"recordName":"b","recordType":"T","fields":{"d":{"value":1790000000000,"type":"TIMESTAMP"},"f":{"value":2.5,"type":"DOUBLE"},"y":{"value":"AAEC","type":"BYTES"}}}}]}"#),
            ("private/records/modify", #"{"zoneID":{"zoneName":"Lists"},"operations":[{"operationType":"forceUpdate","record":{"recordName":"a","recordType":"T","fields":{"n":{"value":2}}}},{"operationType":"forceDelete","record":{"recordName":"c"}}]}"#),
            ("private/records/lookup", #"{"zoneID":{"zoneName":"Lists"},"records":[{"recordName":"a"},{"recordName":"b","desiredKeys":["n"]}]}"#),
            ("private/records/query", #"{"zoneID":{"zoneName":"Lists"},"resultsLimit":5,"query":{"recordType":"T","filterBy":[{"comparator":"GREATER_THAN","fieldName":"n","fieldValue":{"value":0}},{"comparator":"CONTAINS_ALL_TOKENS","fieldName":"allTokens","fieldValue":{"value":"x y"}}],"sortBy":[{"fieldName":"n","ascending":false}]}}"#),
            ("private/records/changes", #"{"zoneID":{"zoneName":"Lists"},"resultsLimit":3}"#),
            ("private/zones/lookup", #"{"zones":[{"zoneName":"Lists"}]}"#),
            ("private/zones/list", ""),
            ("private/changes/zone", #"{"zones":[{"zoneID":{"zoneName":"Lists"},"resultsLimit":2}]}"#),
            ("private/changes/database", #"{"resultsLimit":2}"#),
            ("private/subscriptions/modify", #"{"operations":[{"operationType":"create","subscription":{"subscriptionID":"s1","subscriptionType":"query","query":{"recordType":"T","filterBy":[{"comparator":"EQUALS","fieldName":"n","fieldValue":{"value":1}}]},"firesOn":["create","update"],"zoneID":{"zoneName":"Lists"}}},{"operationType":"create","subscription":{"subscriptionID":"s2","subscriptionType":"zone","zoneID":{"zoneName":"Lists"}}}]}"#),
            ("private/subscriptions/lookup", #"{"subscriptions":[{"subscriptionID":"s1"}]}"#),
            ("public/records/modify", #"{"operations":[{"operationType":"create","record":{"recordName":"p","recordType":"Post","fields":{"t":{"value":"hi"}}}}]}"#),
            ("public/records/query", #"{"query":{"recordType":"Post","filterBy":[{"comparator":"BEGINS_WITH","fieldName":"t","fieldValue":{"value":"h"}}]}}"#),
        ]
        return requests.map { Array(($0.0 + "\n" + $0.1).utf8) }
    }
}
