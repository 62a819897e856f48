import CumulusModel

/// `users/discover` (GET and POST), `users/lookup/email` and `users/lookup/id`
/// (`Docs/HTTP-API.md`, "Routes"), in CloudKit's shapes. CloudKit answers only users who
/// made themselves discoverable; Cumulus has no such setting yet, so no user is
/// discoverable: every answer is the same whoever exists, and tells nothing about who
/// does (`Docs/SECURITY.md`, "Access rules").
extension CloudKitAPI {
    /// The reason given for each lookup that finds no one, the same for every user.
    static let undiscoverableReason = "no discoverable user matches; users are discoverable only once they choose to be"

    /// `GET users/discover` (every discoverable user the caller knows) and
    /// `POST users/discover` (`{"lookupInfos": [{emailAddress | phoneNumber |
    /// userRecordName}]}`): `{"users": []}`, as CloudKit answers when none of them is
    /// discoverable (it lists only identities it found).
    func discoverUsers(_ request: APIRequest, _ context: Context) throws -> APIResponse {
        if request.method == "POST" {
            _ = try lookupList(context.body.json(), key: "lookupInfos", fields: ["emailAddress", "phoneNumber", "userRecordName"])
        }
        return APIResponse(json: ["users": .array([])])
    }

    /// `users/lookup/email` (`{"users": [{"emailAddress"}]}`) or `users/lookup/id`
    /// (`{"users": [{"userRecordName"}]}`): per asked user, in order, a lookup error
    /// naming what was asked with `NOT_FOUND`, as records/lookup answers a missing record.
    func lookUpUsers(_ context: Context, by field: String) throws -> APIResponse {
        let asked = try lookupList(context.body.json(), key: "users", fields: [field])
        return APIResponse(json: ["users": .array(asked.map { item in
            var entry: [String: JSONValue] = [
                "serverErrorCode": .string(ServerErrorCode.notFound.name), "reason": .string(Self.undiscoverableReason),
            ]
            if let value = item[field] { entry[field] = value }
            return .object(entry)
        })])
    }

    /// The list of lookup dictionaries under `key`, each an object whose `fields` are
    /// strings when present: at most ``APILimits/itemsPerRequest`` of them.
    private func lookupList(_ body: JSONValue, key: String, fields: [String]) throws -> [JSONValue] {
        guard case .array(let items)? = body[key] else {
            throw CumulusError(.invalidArguments, "'\(key)' must be a list of {\(fields.joined(separator: " | "))}")
        }
        try checkItemCount(items.count, of: key)
        for (index, item) in items.enumerated() {
            guard case .object(let entry) = item, fields.contains(where: { entry[$0]?.stringValue != nil }) else {
                throw CumulusError(.invalidArguments, "\(key)[\(index)] must hold a string \(fields.joined(separator: " or "))")
            }
        }
        return items
    }
}
