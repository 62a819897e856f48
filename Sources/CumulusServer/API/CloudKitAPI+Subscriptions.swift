import CumulusEngine
import CumulusModel

/// `subscriptions/list`, `subscriptions/lookup`, `subscriptions/modify` (`Docs/HTTP-API.md`, "Routes").
extension CloudKitAPI {
    /// A subscription dictionary; `subscriptionType` is `query`, `zone` or (Cumulus's
    /// addition) `database`.
    static func subscriptionJSON(_ subscription: Subscription) -> JSONValue {
        var dict: [String: JSONValue] = ["subscriptionID": .string(subscription.subscriptionID)]
        switch subscription.kind {
        case .query(let query, let zoneID, let firesOn, let firesOnce):
            dict["subscriptionType"] = "query"
            dict["query"] = query.wireJSON
            var fires: [JSONValue] = []
            if firesOn.contains(.creation) { fires.append("create") }
            if firesOn.contains(.update) { fires.append("update") }
            if firesOn.contains(.deletion) { fires.append("delete") }
            dict["firesOn"] = .array(fires)
            dict["firesOnce"] = .bool(firesOnce)
            dict["zoneWide"] = .bool(zoneID == nil)
            if let zoneID { dict["zoneID"] = zoneID.wireJSON }
        case .zone(let zoneID, let recordType):
            dict["subscriptionType"] = "zone"
            dict["zoneID"] = zoneID.wireJSON
            if let recordType { dict["recordType"] = .string(recordType) }
        case .database(let recordType):
            dict["subscriptionType"] = "database"
            if let recordType { dict["recordType"] = .string(recordType) }
        }
        return .object(dict)
    }

    static func subscriptionError(_ id: String, _ error: CumulusError) -> JSONValue {
        ["subscriptionID": .string(id), "serverErrorCode": .string(ServerErrorCode(error).name), "reason": .string(error.message)]
    }

    static func decodeSubscription(_ json: JSONValue) throws -> Subscription {
        guard let id = json["subscriptionID"]?.stringValue else {
            throw CumulusError(.invalidArguments, "a subscription needs a 'subscriptionID'")
        }
        let zoneID = try json["zoneID"].flatMap { $0 == .null ? nil : try ZoneID(wire: $0, field: "zoneID") }
        let recordType = json["recordType"]?.stringValue
        switch json["subscriptionType"]?.stringValue {
        case "query":
            guard let queryJSON = json["query"] else { throw CumulusError(.invalidArguments, "a query subscription needs a 'query'") }
            let query = try Query(wire: queryJSON, defaultZone: zoneID ?? .default)
            var firesOn: FiresOn = []
            for value in json["firesOn"]?.arrayValue ?? [] {
                switch value.stringValue {
                case "create": firesOn.insert(.creation)
                case "update": firesOn.insert(.update)
                case "delete": firesOn.insert(.deletion)
                default: throw CumulusError(.invalidArguments, "'firesOn' holds create, update and delete only")
                }
            }
            if json["firesOn"] == nil { firesOn = .all }
            let zoneWide = json["zoneWide"]?.boolValue ?? (zoneID == nil)
            return Subscription(
                subscriptionID: id,
                kind: .query(query, zoneID: zoneWide ? nil : (zoneID ?? .default), firesOn: firesOn,
                             firesOnce: json["firesOnce"]?.boolValue ?? false))
        case "zone":
            guard let zoneID else { throw CumulusError(.invalidArguments, "a zone subscription needs a 'zoneID'") }
            return Subscription(subscriptionID: id, kind: .zone(zoneID, recordType: recordType))
        case "database":
            return Subscription(subscriptionID: id, kind: .database(recordType: recordType))
        case let other:
            throw CumulusError(
                .invalidArguments, "'subscriptionType' must be query, zone or database, not \(other ?? "missing")")
        }
    }

    func listSubscriptions(_ context: Context) throws -> APIResponse {
        let all = try context.database.allSubscriptions(as: context.caller.user)
        return APIResponse(json: ["subscriptions": .array(all.map(Self.subscriptionJSON))])
    }

    func lookupSubscriptions(_ context: Context) throws -> APIResponse {
        guard let requested = try context.body["subscriptions"]?.arrayValue else {
            throw CumulusError(.invalidArguments, "'subscriptions' must be a list of {subscriptionID}")
        }
        try checkItemCount(requested.count, of: "subscriptions")
        let ids = try requested.map { entry -> String in
            guard let id = entry["subscriptionID"]?.stringValue ?? entry.stringValue else {
                throw CumulusError(.invalidArguments, "each entry needs a 'subscriptionID'")
            }
            return id
        }
        let results = try context.database.fetchSubscriptions(ids, as: context.caller.user)
        return APIResponse(json: ["subscriptions": .array(results.map { item in
            switch item.result {
            case .success(let subscription): Self.subscriptionJSON(subscription)
            case .failure(let error): Self.subscriptionError(item.subscriptionID, error)
            }
        })])
    }

    func modifySubscriptions(_ context: Context) async throws -> APIResponse {
        guard let operations = try context.body["operations"]?.arrayValue else {
            throw CumulusError(.invalidArguments, "'operations' must be a list of {operationType, subscription}")
        }
        try checkItemCount(operations.count, of: "operations")
        var answers: [JSONValue] = []
        for (index, operation) in operations.enumerated() {
            guard let type = operation["operationType"]?.stringValue, let json = try operation["subscription"]?.json() else {
                throw CumulusError(.invalidArguments, "operation \(index) needs an 'operationType' and a 'subscription'")
            }
            switch type {
            case "create", "update":
                let subscription: Subscription
                do {
                    subscription = try Self.decodeSubscription(json)
                } catch let error as CumulusError {
                    answers.append(Self.subscriptionError(json["subscriptionID"]?.stringValue ?? "", error))
                    continue
                }
                let result = try await context.database.saveSubscriptions(
                    [subscription], maxPerUser: limits.subscriptionsPerUser, as: context.caller.user,
                    requestID: context.requestID)[0]
                switch result.result {
                case .success(let saved): answers.append(Self.subscriptionJSON(saved))
                case .failure(let error): answers.append(Self.subscriptionError(result.subscriptionID, error))
                }
            case "delete":
                guard let id = json["subscriptionID"]?.stringValue else {
                    throw CumulusError(.invalidArguments, "operation \(index): delete needs a 'subscriptionID'")
                }
                let result = try await context.database.deleteSubscriptions(
                    [id], as: context.caller.user, requestID: context.requestID)[0]
                switch result.result {
                case .success: answers.append(["subscriptionID": .string(id), "deleted": true])
                case .failure(let error): answers.append(Self.subscriptionError(id, error))
                }
            default:
                throw CumulusError(.invalidArguments, "operation \(index): unknown operationType '\(type)'; use create, update or delete")
            }
        }
        return APIResponse(json: ["subscriptions": .array(answers)])
    }
}
