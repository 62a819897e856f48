import CumulusEngine
import CumulusModel
import CumulusTools
import Foundation

/// The console's change-token page (operators): a client's sync token, pasted, and what it
/// names (``ChangeTokenReport``). Posted in the body, not the URL: a token is a client's
/// place in its data, kept out of URLs and the logs that record them.
extension CloudKitAPI {
    /// `POST /console/api/change-token` with `{"token"}` (base64, as `syncToken` carries it).
    func consoleChangeToken(_ request: APIRequest) throws -> JSONValue {
        guard case .object(let body)? = try? JSONValue.parse(Data(request.body)),
            case .string(let text)? = body["token"]
        else {
            throw ConsoleRefusal(code: .badRequest, reason: "send {\"token\": …}, a syncToken as the client holds it")
        }
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let token = ChangeToken(base64: trimmed), !token.bytes.isEmpty else {
            throw ConsoleRefusal(code: .badRequest, reason: "that is not base64: a syncToken is what a changes answer's syncToken holds")
        }
        let report = try container.inspect(token)
        var answer: [String: JSONValue] = [
            "kind": .string(report.isZoneToken ? "zone" : "database"), "database": .string("\(report.database)"),
            "epoch": .int(Int64(clamping: report.epoch)), "nodeEpoch": .int(Int64(clamping: report.nodeEpoch)),
            "sameLog": .bool(report.sameLog), "position": .int(Int64(clamping: report.position)),
            "offset": .int(Int64(report.offset)), "feedHead": .int(Int64(clamping: report.feedHead)),
            "incarnation": .int(Int64(clamping: report.incarnation)),
        ]
        if let zone = report.zoneID { answer["zone"] = .string("\(zone)") }
        if let current = report.currentIncarnation { answer["currentIncarnation"] = .int(Int64(clamping: current)) }
        if let end = report.epochEnd { answer["epochEnd"] = .int(Int64(clamping: end)) }
        if let covered = report.lastCovered { answer["lastCovered"] = .int(Int64(clamping: covered)) }
        if let time = report.lastCoveredTime {
            answer["lastCoveredTime"] = .int(time.millisecondsSince1970)
            answer["lastCoveredISO"] = .string(ToolTime.iso(time))
        }
        if let refusal = report.refusal {
            answer["refusal"] = ["serverErrorCode": .string(ServerErrorCode(refusal).name), "reason": .string(refusal.message)]
        }
        return .object(answer)
    }
}
