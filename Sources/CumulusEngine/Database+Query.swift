import CumulusLog
import CumulusModel
import CumulusStorage
import CumulusViews

/// Queries (`Docs/DATA-MODEL.md`, "Queries").
extension Database {
    /// Results per page when the caller does not say.
    public static let defaultResultsLimit = 100
    /// Most results per page.
    public static let maxResultsLimit = 400
    /// Most records one page may read when no index serves the query's order (it
    /// spans every zone, or sorts by distance or record name first): about a tenth of
    /// a second here. A page that would read more is `limitExceeded`.
    public static let defaultQueryScanLimit = 100_000
    /// Most records a page passes over that its caller may not read (another
    /// user's, where READ is granted to creators only; outside a share) before it
    /// ends early with a cursor: a run of them cannot make one page unbounded.
    public static let defaultHiddenScanLimit = 1_000
    /// CPU time one request may spend reading a query page or planning a modify
    /// operation, checked every hundred-odd records or items; past it the request is
    /// `limitExceeded` (issue 40).
    public static let defaultRequestCPULimit: Duration = .seconds(2)

    /// Runs `query` in one zone, or in every zone of the database when `zoneID` is
    /// `nil`, and returns the first page. `desiredKeys` limits the user fields
    /// returned (`nil`: all; system fields always come back). `scanLimit` bounds the
    /// records a page reads when no index serves its order (``defaultQueryScanLimit``);
    /// a page also ends once its records take `byteLimit` bytes as stored (with at
    /// least one record), its cursor resuming after the last, and once it has passed
    /// over `hiddenLimit` records the caller may not read (``defaultHiddenScanLimit``).
    /// A page that spends more than `cpuLimit` of CPU time is `limitExceeded`.
    public func query(
        _ query: Query, in zoneID: ZoneID? = nil, resultsLimit: Int? = nil, desiredKeys: [String]? = nil,
        scanLimit: Int = Database.defaultQueryScanLimit, byteLimit: Int = .max,
        hiddenLimit: Int = Database.defaultHiddenScanLimit, cpuLimit: Duration = Database.defaultRequestCPULimit,
        as actor: String?
    ) throws -> QueryResult {
        var records: [Record] = []
        let cursor = try self.query(
            query, in: zoneID, resultsLimit: resultsLimit, desiredKeys: desiredKeys, scanLimit: scanLimit,
            byteLimit: byteLimit, hiddenLimit: hiddenLimit, cpuLimit: cpuLimit, as: actor
        ) { page in records = try page.decodedRecords() }
        return QueryResult(records: records, cursor: cursor)
    }

    /// The first page of `query`, handed to `body` as stored records borrowed from
    /// the read (``StoredRecordPage``, valid only while `body` runs); returns the
    /// cursor of the next page, if there is one. The same page as
    /// ``query(_:in:resultsLimit:desiredKeys:scanLimit:byteLimit:hiddenLimit:cpuLimit:as:)``.
    public func query(
        _ query: Query, in zoneID: ZoneID? = nil, resultsLimit: Int? = nil, desiredKeys: [String]? = nil,
        scanLimit: Int = Database.defaultQueryScanLimit, byteLimit: Int = .max,
        hiddenLimit: Int = Database.defaultHiddenScanLimit, cpuLimit: Duration = Database.defaultRequestCPULimit,
        as actor: String?, _ body: (StoredRecordPage) throws -> Void
    ) throws -> QueryCursor? {
        try AccessPolicy.checkRead(id, actor: actor)
        try NameRules.checkRecordType(query.recordType)
        var normalized = query
        normalized.filters = query.filters.map { filter in
            var copy = filter
            copy.value = normalizeReferences(filter.value)
            return copy
        }
        for filter in normalized.filters {
            if filter.comparator == .near, filter.distance.map({ !$0.isFinite || $0 < 0 }) ?? true {
                throw CumulusError(.invalidArguments, "NEAR needs a finite, non-negative distance in metres")
            }
        }
        let zone = zoneID.map { Normalizer(database: id).zone($0) }
        return try page(QueryCursor.Contents(database: id, zoneID: zone, query: normalized, position: []),
                        actor: actor, resultsLimit: resultsLimit, desiredKeys: desiredKeys, scanLimit: scanLimit,
                        byteLimit: byteLimit, hiddenLimit: hiddenLimit, cpuLimit: cpuLimit, body)
    }

    /// The next page of the query a cursor came from.
    public func query(
        continuing cursor: QueryCursor, resultsLimit: Int? = nil, desiredKeys: [String]? = nil,
        scanLimit: Int = Database.defaultQueryScanLimit, byteLimit: Int = .max,
        hiddenLimit: Int = Database.defaultHiddenScanLimit, cpuLimit: Duration = Database.defaultRequestCPULimit,
        as actor: String?
    ) throws -> QueryResult {
        var records: [Record] = []
        let next = try query(
            continuing: cursor, resultsLimit: resultsLimit, desiredKeys: desiredKeys, scanLimit: scanLimit,
            byteLimit: byteLimit, hiddenLimit: hiddenLimit, cpuLimit: cpuLimit, as: actor
        ) { page in records = try page.decodedRecords() }
        return QueryResult(records: records, cursor: next)
    }

    /// The next page of the query a cursor came from, handed to `body` as stored
    /// records (``StoredRecordPage``, valid only while `body` runs); returns the
    /// cursor of the page after it, if there is one.
    public func query(
        continuing cursor: QueryCursor, resultsLimit: Int? = nil, desiredKeys: [String]? = nil,
        scanLimit: Int = Database.defaultQueryScanLimit, byteLimit: Int = .max,
        hiddenLimit: Int = Database.defaultHiddenScanLimit, cpuLimit: Duration = Database.defaultRequestCPULimit,
        as actor: String?, _ body: (StoredRecordPage) throws -> Void
    ) throws -> QueryCursor? {
        try AccessPolicy.checkRead(id, actor: actor)
        let contents = try cursor.open(secret: container.secret, database: id, actor: actor)
        return try page(
            contents, actor: actor, resultsLimit: resultsLimit, desiredKeys: desiredKeys, scanLimit: scanLimit,
            byteLimit: byteLimit, hiddenLimit: hiddenLimit, cpuLimit: cpuLimit, body)
    }

    /// Runs one page inside one read transaction and hands it to `body` there, before
    /// the transaction ends: the page's records are its bytes in the map.
    private func page(
        _ contents: QueryCursor.Contents, actor: String?, resultsLimit: Int?, desiredKeys: [String]?, scanLimit: Int,
        byteLimit: Int, hiddenLimit: Int, cpuLimit: Duration, _ body: (StoredRecordPage) throws -> Void
    ) throws -> QueryCursor? {
        let limit = resultsLimit ?? Self.defaultResultsLimit
        guard limit > 0, limit <= Self.maxResultsLimit else {
            throw CumulusError(.invalidArguments, "resultsLimit must be between 1 and \(Self.maxResultsLimit)")
        }
        let views = container.views
        let requested = id
        let desired = desiredKeys.map(Set.init)
        let (more, lastPosition) = try container.store.environment.read { txn -> (Bool, [UInt8]?) in
            // The shared database queries one shared zone, in its owner's database.
            var database = requested
            var shared: SharedZoneRead?
            if requested.scope == .shared {
                guard let zone = contents.zoneID, let actor else {
                    throw CumulusError(.invalidArguments, "a query in the shared database names its zone (zoneID)")
                }
                let opened = try openSharedZone(zone, actor: actor, txn)
                shared = opened
                database = opened.owner
            }
            let schema = try views.schema(SchemaID(database), in: txn)
            // Checked on every page, not only the first: the schema may have lost an
            // index, or the user a role, since the cursor was made.
            try QueryBounds.check(contents.query)
            try schema.checkQuery(contents.query)
            let onlyOwn = try ReadAccess(views: views, database: database, schema: schema, actor: actor, txn: txn)
                .queryScope(contents.query.recordType)
            var zones: [ZoneID]
            if let zone = contents.zoneID {
                if !zone.isDefaultZone, try views.zone(zone, in: database, txn) == nil {
                    throw CumulusError(.zoneNotFound, "zone \(zone.zoneName) does not exist")
                }
                zones = [zone]
            } else {
                zones = try views.zones(in: database, txn).map(\.zone.zoneID)
                if database.scope != .shared { zones.insert(Normalizer(database: database).zone(.default), at: 0) }
            }
            var executor = QueryExecutor(views: views, txn: txn, database: database)
            executor.collectScanLimit = scanLimit
            executor.byteLimit = byteLimit
            executor.hiddenLimit = max(1, hiddenLimit)
            executor.budget = WorkBudget(cpuLimit, for: "this query page")
            // What the caller may not read is passed over inside the walk, before any
            // filter sees it, so neither the page, nor `more`, nor the cursor's
            // position tells of it (issue 40).
            if let onlyOwn {
                // Only `_creator` may read this type: the caller sees their own records.
                executor.visible = { $0.creatorUserRecordID?.recordName == onlyOwn }
            } else if let shared {
                // Records outside the shares open to the caller.
                executor.visible = { try self.isVisible($0, in: shared, txn) }
            }
            let page = try views.withRecordsCursor(txn) { cursor in
                executor.records = cursor
                defer { executor.records = nil }
                return try executor.run(
                    contents.query, zones: zones, after: contents.position.isEmpty ? nil : contents.position, limit: limit)
            }
            try body(StoredRecordPage(records: page.stored, desiredKeys: desired))
            return (page.more, page.lastPosition)
        }
        guard more, let lastPosition else { return nil }
        var next = contents
        next.position = lastPosition
        return try QueryCursor.make(next, secret: container.secret, actor: actor)
    }

    func normalizeReferences(_ value: FieldValue) -> FieldValue {
        let normalizer = Normalizer(database: id)
        switch value {
        case .reference(let reference):
            return .reference(Reference(recordID: normalizer.recordID(reference.recordID), action: reference.action))
        case .list(let items):
            return .list(items.map(normalizeReferences))
        default:
            return value
        }
    }
}
