import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusTools
import Foundation

/// The console's long work (operators; ``ConsoleJobs``) and a commit read whole: verifying
/// the hash chain, exporting a range of the log for auditors (with the export verified
/// against the log, then offered as a download), making a past state ready for "as of",
/// the difference between two points, and the first commit that changed a query's
/// result (bisect), each as the CLI's tool computes it, with progress and a cancel.
extension CloudKitAPI {
    /// Largest audit export the console writes: one the page can download in one answer.
    /// Larger ranges are `cumulus audit export`'s.
    static let consoleAuditLimit = 64 << 20
    /// Most record differences a diff job lists (it counts them all).
    static let consoleDiffListed = 500

    /// `GET /console/api/jobs`: every job remembered, newest first; `POST` with
    /// `{"kind", …}` starts one.
    func consoleJobs(_ request: APIRequest, _ session: ConsoleSessions.Session, _ jobs: ConsoleJobs) throws -> JSONValue {
        guard request.method == "POST" else { return .array(jobs.all().map(Self.describe)) }
        guard case .object(let body)? = try? JSONValue.parse(Data(request.body)), case .string(let kind)? = body["kind"] else {
            throw ConsoleRefusal(code: .badRequest, reason: "send {\"kind\": \"verify\" | \"audit\" | \"as-of\" | \"diff\" | \"bisect\", …}")
        }
        let store = container.store
        let head = store.head.sequence
        func sequence(_ name: String, default value: UInt64) throws -> UInt64 {
            guard let given = body[name] else { return value }
            guard let number = given.int64Value, number >= 0 else {
                throw ConsoleRefusal(code: .badRequest, reason: "\(name) must be a commit number")
            }
            return UInt64(number)
        }
        func point(_ name: String) throws -> UInt64 {
            guard case .string(let text)? = body[name] else {
                throw ConsoleRefusal(code: .badRequest, reason: "name \(name): a commit number or an ISO-8601 time")
            }
            return try PointInTime(parsing: text).resolve(in: store)
        }
        let status: ConsoleJobs.Status
        switch kind {
        case "verify":
            let from = try sequence("from", default: 1)
            let through = min(try sequence("through", default: head), head)
            status = jobs.start(
                kind: kind, label: "verify the hash chain from #\(from) through #\(through)", owner: session.user,
                total: through >= from ? through - from + 1 : 0
            ) { work in
                let report = try store.verifyChain(from: from, through: through, progress: work.report)
                var result: [String: JSONValue] = [
                    "from": .int(Int64(clamping: report.from)), "verified": .int(Int64(clamping: report.verified)),
                    "valid": .bool(report.firstBad == nil),
                ]
                if let bad = report.firstBad { result["firstBad"] = .int(Int64(clamping: bad)) }
                if let problem = report.problem { result["problem"] = .string(problem) }
                return .object(result)
            }
        case "audit":
            let from = try sequence("from", default: 1)
            let through = min(try sequence("through", default: head), head)
            let format = AuditFormat(rawValue: body["format"]?.stringValue ?? "jsonl") ?? .jsonl
            let name = "cumulus-audit-\(from)-\(through).\(format.rawValue)"
            status = jobs.start(
                kind: kind, label: "audit export of #\(from) through #\(through) (\(format.rawValue))", owner: session.user,
                total: through >= from ? through - from + 1 : 0, fileName: name
            ) { work in
                guard FileManager.default.createFile(atPath: work.file, contents: nil),
                    let handle = FileHandle(forWritingAtPath: work.file)
                else { throw CumulusError(.internalError, "could not create the export file") }
                let summary = try {
                    defer { try? handle.close() }
                    return try AuditExporter.export(
                        store, format: format, filter: LogFilter(from: from, through: through), to: LineWriter(handle)
                    ) { sequence in
                        try work.report(sequence >= from ? sequence - from + 1 : 0)
                        if handle.offsetInFile > Self.consoleAuditLimit {
                            throw CumulusError(
                                .limitExceeded,
                                "the export passed \(Self.consoleAuditLimit >> 20) MiB at commit #\(sequence); export a smaller range, or use `cumulus audit export`")
                        }
                    }
                }()
                // What is offered has been checked against the log, line for line.
                let verified = try AuditVerifier.verify(path: work.file, against: store)
                let bytes = (try? FileManager.default.attributesOfItem(atPath: work.file)[.size] as? Int) ?? 0
                return [
                    "events": .int(Int64(summary.events)), "bytes": .int(Int64(bytes)), "valid": .bool(verified.isValid),
                    "verification": .string(verified.description),
                ]
            }
        case "as-of":
            guard let consoleTimeTravel else {
                throw ConsoleRefusal(code: .notFound, reason: "this node does not keep past states for the console")
            }
            let target = try point("point")
            let base = try Checkpoints.latest(in: consoleTimeTravel.checkpoints, atOrBefore: target, matching: store)
            status = jobs.start(
                kind: kind, label: "the data as of #\(target)", owner: session.user, total: target - (base?.sequence ?? 0)
            ) { work in
                let past = try consoleTimeTravel.prepare(.sequence(target)) { replayed in
                    try work.report(replayed - min(replayed, base?.sequence ?? 0))
                }
                return ["sequence": .int(Int64(clamping: past.sequence)), "replayed": .int(Int64(clamping: past.replayed))]
            }
        case "diff":
            let (from, to) = (try point("from"), try point("to"))
            let scope = ScopeMatcher(database: body["database"]?.stringValue.nonEmpty, zone: body["zone"]?.stringValue.nonEmpty)
            status = jobs.start(kind: kind, label: "what changed from #\(from) to #\(to)", owner: session.user) { work in
                try work.report(0)
                let differences = try StateDiff.between(from, to, in: store, scope: scope)
                return [
                    "from": .int(Int64(clamping: from)), "to": .int(Int64(clamping: to)), "count": .int(Int64(differences.count)),
                    "differences": .array(differences.prefix(Self.consoleDiffListed).map(Self.describe)),
                ]
            }
        case "bisect":
            guard case .string(let type)? = body["type"], !type.isEmpty, case .string(let predicate)? = body["query"] else {
                throw ConsoleRefusal(code: .badRequest, reason: "a bisect needs the record type (type) and a predicate (query)")
            }
            let wanted = body["when"]?.stringValue ?? BisectCondition.becameNonEmpty.rawValue
            guard let condition = BisectCondition(rawValue: wanted) else {
                throw ConsoleRefusal(
                    code: .badRequest, reason: "when must be one of \(BisectCondition.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            let query = try PredicateParser.query(recordType: type, predicate: predicate)
            let after = body["after"].flatMap(\.stringValue).flatMap { $0.isEmpty ? nil : $0 } == nil ? 0 : try point("after")
            let scope = ScopeMatcher(database: body["database"]?.stringValue.nonEmpty, zone: body["zone"]?.stringValue.nonEmpty)
            status = jobs.start(
                kind: kind, label: "the first commit after which \(type) where \(predicate) became \(condition.rawValue)",
                owner: session.user, total: head
            ) { work in
                guard let finding = try Bisector.search(
                    store, query: query, scope: scope, condition: condition, after: after, progress: work.report)
                else { return ["found": false] }
                return [
                    "found": true, "sequence": .int(Int64(clamping: finding.sequence)),
                    "time": .string(ToolTime.iso(finding.commit.timestamp)), "user": .string(finding.commit.actor),
                    "requestID": .string(finding.commit.requestID), "countBefore": .int(Int64(finding.countBefore)),
                    "countAfter": .int(Int64(finding.countAfter)),
                    "changed": .array(finding.changed.map { .string($0.recordID.recordName) }),
                ]
            }
        default:
            throw ConsoleRefusal(code: .badRequest, reason: "no job of kind \(kind); the kinds are verify, audit, as-of, diff and bisect")
        }
        return Self.describe(status)
    }

    /// `GET /console/api/jobs/job?id=`: one job; `DELETE` cancels it.
    func consoleJob(_ request: APIRequest, _ jobs: ConsoleJobs) throws -> JSONValue {
        let id = try Self.consoleParameter(request, "id")
        if request.method == "DELETE" { jobs.cancel(id) }
        guard let status = jobs.status(id) else { throw ConsoleRefusal(code: .notFound, reason: "no job \(id)") }
        return Self.describe(status)
    }

    /// `GET /console/api/jobs/download?id=`: a finished export, as an attachment.
    func consoleJobDownload(_ request: APIRequest, _ jobs: ConsoleJobs) throws -> APIResponse {
        let id = try Self.consoleParameter(request, "id")
        guard let file = jobs.download(id), let data = FileManager.default.contents(atPath: file.path) else {
            throw ConsoleRefusal(code: .notFound, reason: "job \(id) has no file to download (not done, or forgotten)")
        }
        var response = Self.consoleFile(
            Array(data), contentType: file.name.hasSuffix(".csv") ? "text/csv; charset=utf-8" : "application/x-ndjson; charset=utf-8")
        response.headers["content-disposition"] = "attachment; filename=\"\(file.name)\""
        return response
    }

    /// `GET /console/api/commit?sequence=N|head`: one commit, its chain hash and every
    /// event as the audit line an export holds for it.
    func consoleCommit(_ request: APIRequest) throws -> JSONValue {
        let store = container.store
        let text = try Self.consoleParameter(request, "sequence")
        let head = store.head
        guard let sequence = text == "head" ? head.sequence : UInt64(text) else {
            throw ConsoleRefusal(code: .badRequest, reason: "sequence is a commit number, or head")
        }
        var answer: [String: JSONValue] = [
            "head": .int(Int64(clamping: head.sequence)), "headHash": .string(Hex.encode(head.hash)),
            "firstRetained": .int(Int64(clamping: store.firstRetained)), "epoch": .int(Int64(clamping: store.epoch)),
            "logID": .string(Hex.encode(store.logID)),
        ]
        guard sequence > 0 else { return .object(answer) }
        guard sequence <= head.sequence, let commit = try store.read(sequence) else {
            throw ConsoleRefusal(code: .notFound, reason: "the log holds no commit #\(sequence) (it holds #\(store.firstRetained) through #\(head.sequence))")
        }
        let entries = try LogBrowser.entries(in: store, filter: LogFilter(from: sequence, through: sequence))
        answer["sequence"] = .int(Int64(clamping: sequence))
        answer["time"] = .string(ToolTime.iso(commit.timestamp))
        answer["user"] = .string(commit.actor)
        answer["requestID"] = .string(commit.requestID)
        answer["hash"] = .string(try store.chainHash(at: sequence).map(Hex.encode) ?? "")
        answer["events"] = .array(try entries.map { try JSONValue.parse(Data(EntryFormatter.json($0).utf8)) })
        return .object(answer)
    }

    static func describe(_ status: ConsoleJobs.Status) -> JSONValue {
        var job: [String: JSONValue] = [
            "id": .string(status.id), "kind": .string(status.kind), "label": .string(status.label),
            "owner": .string(status.owner), "state": .string(status.state.rawValue),
            "started": .int(Int64((status.started.timeIntervalSince1970 * 1000).rounded(.down))),
            "done": .int(Int64(clamping: status.done)), "total": .int(Int64(clamping: status.total)),
        ]
        if let finished = status.finished { job["finished"] = .int(Int64((finished.timeIntervalSince1970 * 1000).rounded(.down))) }
        if let result = status.result { job["result"] = result }
        if let error = status.error { job["error"] = .string(error) }
        if let name = status.fileName { job["fileName"] = .string(name) }
        return .object(job)
    }

    static func describe(_ difference: RecordDifference) -> JSONValue {
        let kind: String =
            switch difference.kind {
            case .created: "created"
            case .changed: "changed"
            case .deleted(let cause): "\(cause)"
            }
        return [
            "record": .string(difference.location.recordID.recordName), "zone": .string("\(difference.location.recordID.zoneID)"),
            "database": .string("\(difference.location.database)"), "recordType": .string(difference.recordType),
            "kind": .string(kind), "changes": .array(difference.changes.map { .string("\($0)") }),
        ]
    }
}
