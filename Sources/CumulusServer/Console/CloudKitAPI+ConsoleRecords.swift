import CumulusEngine
import CumulusModel
import CumulusTools
import Foundation

/// The console's records pages (`Docs/OPERATIONS.md`, "The console"): the Web Services
/// API itself, called by the page under `/console/database/1/…` as the session's user,
/// and the few reads CloudKit's API has no call for (the containers, a schema's indexes
/// for the query builder, a record's referrers, what a delete would take).
///
/// **As whom.** Every call runs as the session's user, or, for an operator acting as
/// someone (``ConsoleSessions/Session/actingAs``), as that user: it sees exactly what
/// that user sees, through the same access rules, and nothing more. Acting as someone
/// reads only: a write while acting is refused. **How.** Each call sends the session's
/// CSRF token, reads included (the API's reads are POSTs too), and is charged to the
/// user's rate limit as a CloudKit client's would be.
extension CloudKitAPI {
    /// A database route under `/console/database/1/…`, served as the session's user.
    func consoleDatabase(_ request: APIRequest, _ matched: Route.Match, requestID: String) async throws -> APIResponse {
        guard let sessions = consoleSessions else {
            return .error(.notFound, "this node does not serve the console; start it with --console (or --dev)")
        }
        var response: APIResponse
        do {
            let (_, session) = try consoleSession(request, sessions, writing: true)
            let route = matched.route(taking: request.method)
            if let acting = session.actingAs, let route, Self.consoleWrites.contains(route) {
                throw ConsoleRefusal(
                    code: .accessDenied,
                    reason: "acting as \(acting) shows what they see and changes nothing; stop acting to write")
            }
            if request.query["asOf"].nonEmpty != nil, let route, Self.consoleWrites.contains(route) {
                throw ConsoleRefusal(code: .accessDenied, reason: "the data as of a past commit can be read, not changed")
            }
            try checkBodySize(request)
            let caller = Caller(container: matched.container, user: session.effectiveUser)
            try charge(caller, for: request)
            let api = try await consoleReading(request, session)
            response = try await api.serveDatabase(request, matched, route: route, caller: caller, requestID: requestID)
            if api.container !== container { response.headers["x-cumulus-as-of"] = String(api.container.store.head.sequence) }
        } catch {
            response = Self.errorResponse(error)
        }
        response.headers.merge(Self.consoleHeaders) { _, console in console }
        return response
    }

    /// The database routes that write: refused to an operator acting as someone.
    static let consoleWrites: Set<Route> = [.recordsModify, .recordsAccept, .zonesModify, .subscriptionsModify, .assetsUpload]

    /// `POST /console/session/act` with `{"user"}`: an operator acts as `user` from now
    /// on, recorded (``AuthStore/recordActAs(operator:user:at:)``); `DELETE` stops.
    func consoleActAs(_ request: APIRequest, _ sessions: ConsoleSessions) throws -> JSONValue {
        let (token, session) = try consoleSession(request, sessions, writing: true)
        guard session.isOperator else {
            throw ConsoleRefusal(code: .accessDenied, reason: "only an operator may act as another user")
        }
        guard request.method == "POST" else { return Self.describe(sessions.act(token, as: nil) ?? session) }
        guard case .object(let body)? = try? JSONValue.parse(Data(request.body)),
            case .string(let user)? = body["user"], !user.isEmpty
        else {
            throw ConsoleRefusal(code: .badRequest, reason: "send {\"user\": …}, the user record name to act as")
        }
        guard try auth.userExists(user) else {
            throw ConsoleRefusal(code: .badRequest, reason: "there is no user \(user)")
        }
        // Recorded before it takes effect: no operator reads as someone unrecorded.
        try auth.recordActAs(operator: session.user, user: user)
        logger?.notice("console act-as", metadata: ["operator": .string(session.user), "user": .string(user)])
        return Self.describe(sessions.act(token, as: user) ?? session)
    }

    /// This API, or with `?asOf=SEQ|TIME` (operators), one reading the data as it was
    /// after that commit (``ConsoleTimeTravel``).
    func consoleReading(_ request: APIRequest, _ session: ConsoleSessions.Session) async throws -> CloudKitAPI {
        guard let point = request.query["asOf"].nonEmpty else { return self }
        guard session.isOperator else {
            throw ConsoleRefusal(code: .accessDenied, reason: "the data as of a past commit is for operators")
        }
        guard let consoleTimeTravel else {
            throw ConsoleRefusal(code: .notFound, reason: "this node does not keep past states for the console")
        }
        var past = self
        past.container = try await consoleTimeTravel.past(try PointInTime(parsing: point)).container
        return past
    }

    /// `GET /console/api/as-of?point=SEQ|TIME` (operators): makes ready the data as it
    /// was after that commit, and says which commit that is, when it was made, and what
    /// making it took.
    func consoleAsOf(_ request: APIRequest) async throws -> JSONValue {
        guard let consoleTimeTravel else {
            throw ConsoleRefusal(code: .notFound, reason: "this node does not keep past states for the console")
        }
        let past = try await consoleTimeTravel.past(try PointInTime(parsing: try Self.consoleParameter(request, "point")))
        var answer: [String: JSONValue] = [
            "sequence": .int(Int64(clamping: past.sequence)), "head": .int(Int64(clamping: container.store.head.sequence)),
            "replayed": .int(Int64(clamping: past.replayed)),
        ]
        if let time = past.time { answer["time"] = .int(time.millisecondsSince1970) }
        if let checkpoint = past.checkpoint { answer["checkpoint"] = .int(Int64(clamping: checkpoint)) }
        return .object(answer)
    }

    /// `GET /console/api/acting`: who acted as whom, and when, newest first (operators).
    func consoleActing() throws -> JSONValue {
        .array(try auth.actAsRecords().map { record in
            [
                "operator": .string(record.operator), "user": .string(record.user),
                "at": .int(Int64((record.at.timeIntervalSince1970 * 1000).rounded(.down))),
            ]
        })
    }

    /// `GET /console/api/containers`: the containers API tokens open, with their
    /// environments: where the records pages can go.
    func consoleContainers() throws -> JSONValue {
        .array(try auth.containers().sorted { $0.key < $1.key }.map { name, environments in
            [
                "name": .string(name),
                "environments": .array(environments.sorted { $0.rawValue < $1.rawValue }.map { .string($0.name) }),
            ]
        })
    }

    /// `GET /console/api/schema?container=&environment=`: the record types and their
    /// fields with their indexes, from which the query builder offers the filters and
    /// sorts a query may use.
    func consoleSchema(_ request: APIRequest) throws -> JSONValue {
        let id = SchemaID(
            container: try Self.consoleParameter(request, "container"),
            environment: try Self.environment(named: request.query["environment"] ?? "development"))
        let schema = try container.schema(id)
        return [
            "container": .string(id.container), "environment": .string(id.environment.name),
            "growsJustInTime": .bool(id.environment == .development),
            "recordTypes": .array(schema.recordTypes.map { type in
                [
                    "name": .string(type.name),
                    "fields": .array(type.fields.filter { $0.systemField == nil }.map { field in
                        [
                            "name": .string(field.name), "type": .string(field.type.schemaText),
                            "queryable": .bool(field.indexes.contains(.queryable)),
                            "sortable": .bool(field.indexes.contains(.sortable)),
                            "searchable": .bool(field.indexes.contains(.searchable)),
                        ]
                    }),
                ]
            }),
        ]
    }

    /// `GET /console/api/records/referrers?…&record=`: the records that refer to one,
    /// of those the session's user may read.
    func consoleReferrers(_ request: APIRequest, _ session: ConsoleSessions.Session) throws -> JSONValue {
        let (database, recordID) = try consoleRecord(request, session)
        return .array(try database.referrers(of: recordID, as: session.effectiveUser).map { referrer in
            ["recordName": .string(referrer.recordID.recordName), "action": .string(referrer.action.wireName)]
        })
    }

    /// `GET /console/api/records/shares?…&zone=`: the shares of a zone of the session's
    /// user's private database, each with its root, public permission and participants
    /// (each as CloudKit's participant dictionary, ``ShareJSON/participant(_:)``).
    func consoleShares(_ request: APIRequest, _ session: ConsoleSessions.Session) throws -> JSONValue {
        let (database, zone) = try consoleZone(request, session)
        return .array(try database.shares(inZone: zone, as: session.effectiveUser).map { share in
            var entry: [String: JSONValue] = [
                "recordName": .string(share.recordName), "publicPermission": .string(share.publicPermission.wireName),
                "participants": .array(share.participants.map(ShareJSON.participant)),
            ]
            if let root = share.rootRecordName { entry["root"] = .string(root) }
            return .object(entry)
        })
    }

    /// `GET /console/api/records/deletion?…&record=`: what deleting a record would take
    /// now, or why it would fail (``DeletionPreview``).
    func consoleDeletion(_ request: APIRequest, _ session: ConsoleSessions.Session) async throws -> JSONValue {
        let (database, recordID) = try consoleRecord(request, session)
        let preview = try await database.previewDeletion(of: recordID, as: session.effectiveUser)
        var answer: [String: JSONValue] = [
            "recordName": .string(preview.recordID.recordName),
            "records": .array(preview.victims.map { victim in
                var entry: [String: JSONValue] = [
                    "recordName": .string(victim.recordID.recordName), "recordType": .string(victim.recordType),
                ]
                if case .cascade(let owner) = victim.cause { entry["owner"] = .string(owner.recordName) }
                return .object(entry)
            }),
        ]
        if let failure = preview.failure {
            answer["failure"] = ["serverErrorCode": .string(ServerErrorCode(failure).name), "reason": .string(failure.message)]
        }
        return .object(answer)
    }

    /// The database and record a console read names in its query: `container`,
    /// `environment`, `database` (public, private, shared), `zone`, `zoneOwner` (the
    /// shared database's zones are other users') and `record`, as the session's user.
    private func consoleRecord(_ request: APIRequest, _ session: ConsoleSessions.Session) throws -> (Database, RecordID) {
        let (database, zone) = try consoleZone(request, session)
        return (database, RecordID(recordName: try Self.consoleParameter(request, "record"), zoneID: zone))
    }

    /// The database and zone a console read names (``consoleRecord(_:_:)``'s, without the record).
    private func consoleZone(_ request: APIRequest, _ session: ConsoleSessions.Session) throws -> (Database, ZoneID) {
        let containerName = try Self.consoleParameter(request, "container")
        let environment = try Self.environment(named: request.query["environment"] ?? "development")
        let scopeName = request.query["database"] ?? "private"
        guard let scope = DatabaseScope(name: scopeName) else {
            throw ConsoleRefusal(code: .badRequest, reason: "database must be public, private or shared, not \(scopeName)")
        }
        let user = session.effectiveUser
        try charge(Caller(container: containerName, user: user), for: request)
        let database = container.database(
            DatabaseID(container: containerName, environment: environment, scope: scope, owner: scope == .public ? "" : user))
        let zone = ZoneID(
            zoneName: request.query["zone"].nonEmpty ?? ZoneID.defaultZoneName,
            ownerName: request.query["zoneOwner"].nonEmpty ?? ZoneID.defaultOwnerName)
        return (database, zone)
    }

    /// A query parameter a console read must have.
    static func consoleParameter(_ request: APIRequest, _ name: String) throws -> String {
        guard let value = request.query[name], !value.isEmpty else {
            throw ConsoleRefusal(code: .badRequest, reason: "name the \(name) (?\(name)=…)")
        }
        return value
    }
}
