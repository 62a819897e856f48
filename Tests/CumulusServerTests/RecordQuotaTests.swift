import CumulusEngine
import CumulusModel
import CumulusServer
import Foundation
import HummingbirdTesting
import Testing

/// What records may hold of the disk (issue 40, item 9), through a live socket: past
/// a user's record bytes in a container, their saves are `QUOTA_EXCEEDED` in every
/// database of it, deletions still go through, and other users are not affected.
@Suite("Record quotas over HTTP")
struct RecordQuotaTests {
    static func note(_ name: String) -> String {
        let body = String(repeating: "x", count: 400)
        return #"{"operations":[{"operationType":"forceReplace","record":{"recordName":"\#(name)","recordType":"Note","fields":{"body":{"value":"\#(body)"}}}}]}"#
    }

    /// The per-record error code of a one-record save (`nil`: saved).
    static func code(_ answer: JSONValue) -> String? {
        answer["records"]?[0]?["serverErrorCode"]?.stringValue
    }

    @Test("past a user's record bytes, saves are QUOTA_EXCEEDED in private and public; deletes go through and make room")
    func recordBytesHaveAQuota() async throws {
        try await RequestBoundsTests.live(configure: {
            $0.limits.recordQuota = RecordQuota(bytesPerUser: 3_000, bytesPerContainer: 1_000_000)
        }) { s in
            var saved = 0
            var refusal: JSONValue?
            while refusal == nil, saved < 30 {
                let answer = try await s.alice("records/modify", Self.note("n\(saved)"), database: "private")
                if Self.code(answer) == nil { saved += 1 } else { refusal = answer }
            }
            let refused = try #require(refusal, "30 notes of 400 bytes fit in a 3,000-byte quota")
            #expect(Self.code(refused) == "QUOTA_EXCEEDED", "\(refused)")
            #expect(refused["records"]?[0]?["reason"]?.stringValue?.contains("delete records") == true, "\(refused)")
            #expect(saved >= 3, "\(saved) notes were saved first")

            // The same user's public records count against the same quota.
            let publicSave = try await s.alice("records/modify", Self.note("p"), database: "public")
            #expect(Self.code(publicSave) == "QUOTA_EXCEEDED", "\(publicSave)")
            // Bob is not Alice.
            let bobs = try await s.bob("records/modify", Self.note("b"), database: "private")
            #expect(Self.code(bobs) == nil, "\(bobs)")

            // Deleting goes through and frees room.
            let deleted = try await s.alice(
                "records/modify",
                #"{"operations":[{"operationType":"forceDelete","record":{"recordName":"n0"}},{"operationType":"forceDelete","record":{"recordName":"n1"}}]}"#,
                database: "private")
            #expect(deleted["records"]?.arrayValue?.allSatisfy { $0["serverErrorCode"] == nil } == true, "\(deleted)")
            let again = try await s.alice("records/modify", Self.note("again"), database: "private")
            #expect(Self.code(again) == nil, "\(again)")
        }
    }

    @Test("once a container's records hold its quota, another user's save is QUOTA_EXCEEDED too")
    func containersHaveAQuota() async throws {
        try await RequestBoundsTests.live(configure: {
            $0.limits.recordQuota = RecordQuota(bytesPerUser: 1_000_000, bytesPerContainer: 2_000)
        }) { s in
            var saved = 0
            while saved < 30 {
                let answer = try await s.alice("records/modify", Self.note("n\(saved)"), database: "private")
                guard Self.code(answer) == nil else {
                    #expect(Self.code(answer) == "QUOTA_EXCEEDED", "\(answer)")
                    break
                }
                saved += 1
            }
            #expect(saved >= 2 && saved < 30)
            let bobs = try await s.bob("records/modify", Self.note("b"), database: "private")
            #expect(Self.code(bobs) == "QUOTA_EXCEEDED", "\(bobs)")
        }
    }
}
