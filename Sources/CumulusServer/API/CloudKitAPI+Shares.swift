import CumulusEngine
import CumulusModel

/// `records/resolve` and `records/accept` (`Docs/HTTP-API.md`, "Sharing"), and the share
/// members of record dictionaries.
extension CloudKitAPI {
    /// A record's dictionary for a response; a share record gains its participants
    /// and permissions, as the caller may see them.
    func recordJSON(_ record: Record, desiredKeys: Set<String>? = nil, _ context: Context) throws -> JSONValue {
        try RecordJSON.encode(
            record, desiredKeys: desiredKeys, numbersAsStrings: context.numbersAsStrings,
            downloadURL: downloadURLs(context), share: context.database.share(describing: record),
            caller: context.caller.user)
    }

    /// The short GUIDs of a resolve or accept request: `shortGUIDs` as ShortGUID
    /// dictionaries (`{value}`) or strings; a share URL stands for the GUID it ends in.
    func shortGUIDs(_ body: some JSONReadable) throws -> (guids: [String], fetchRoot: Bool) {
        guard let entries = try body["shortGUIDs"]?.arrayValue else {
            throw CumulusError(.invalidArguments, "'shortGUIDs' must be a list of {value} (a share's short GUID or URL)")
        }
        try checkItemCount(entries.count, of: "short GUIDs")
        var fetchRoot = false
        let guids = try entries.enumerated().map { index, entry -> String in
            guard let text = entry["value"]?.stringValue ?? entry.stringValue, !text.isEmpty else {
                throw CumulusError(.invalidArguments, "shortGUIDs[\(index)] needs a 'value'")
            }
            if entry["shouldFetchRootRecord"]?.boolValue == true { fetchRoot = true }
            // A URL (…/share/GUID, or …/share/GUID#title) names the GUID it ends in.
            let withoutTitle = text.split(separator: "#", maxSplits: 1).first.map(String.init) ?? text
            return withoutTitle.split(separator: "/").last.map(String.init) ?? withoutTitle
        }
        return (guids, fetchRoot)
    }

    /// `records/resolve`: the metadata of shares by short GUID, without accepting.
    func resolveShares(_ context: Context) throws -> APIResponse {
        let user = try signedInUser(context, "resolve a share")
        let (guids, fetchRoot) = try shortGUIDs(context.body)
        let id = context.database.id
        let results = try container.resolveShares(
            guids, container: id.container, environment: id.environment, fetchRoot: fetchRoot, as: user)
        return try shareResults(guids, results, context, user: user)
    }

    /// `records/accept`: accepts shares by short GUID; each accepted zone appears in
    /// the caller's shared database.
    func acceptShares(_ context: Context) async throws -> APIResponse {
        let user = try signedInUser(context, "accept a share")
        let (guids, _) = try shortGUIDs(context.body)
        let id = context.database.id
        let results = try await container.acceptShares(
            guids, container: id.container, environment: id.environment, as: user, requestID: context.requestID)
        return try shareResults(guids, results, context, user: user)
    }

    private func signedInUser(_ context: Context, _ what: String) throws -> String {
        guard let user = context.caller.user else {
            throw CumulusError(.notAuthenticated, "sign in (ckWebAuthToken) to \(what)")
        }
        return user
    }

    private func shareResults(
        _ guids: [String], _ results: [Result<ShareMetadata, CumulusError>], _ context: Context, user: String
    ) throws -> APIResponse {
        let items = try zip(guids, results).map { guid, result -> JSONValue in
            switch result {
            case .success(let metadata):
                return try ShareJSON.result(metadata, caller: user) { record in
                    try RecordJSON.encode(
                        record, numbersAsStrings: context.numbersAsStrings,
                        share: Share.isShareType(record.recordType) ? metadata.share : nil, caller: user)
                }
            case .failure(let error):
                var json = itemError(error, name: "")
                if case .object(var dict) = json {
                    dict["recordName"] = nil
                    dict["shortGUID"] = .string(guid)
                    json = .object(dict)
                }
                return json
            }
        }
        return APIResponse(json: ["results": .array(items)])
    }
}
