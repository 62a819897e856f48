import CumulusEngine
import CumulusModel
import Foundation

/// Assets (`Docs/HTTP-API.md`, "Assets"): `assets/upload` hands out
/// upload URLs, a POST of the bytes to one answers the receipt the record save
/// carries, and records read back carry a `downloadURL` per asset. The byte routes
/// live outside `/database/1/…` because their URL is their only credential, as in
/// CloudKit; ``CumulusHTTPServer`` streams their bodies.
extension CloudKitAPI {

    /// `POST …/{database}/assets/upload`: `{zoneID?, tokens: [{recordName?,
    /// recordType, fieldName}]}` → `{tokens: [{recordName, recordType, fieldName, url}]}`.
    /// A token without `recordName` gets a fresh one, as a save without one would.
    func requestUploadURLs(_ context: Context) throws -> APIResponse {
        guard let requested = try context.body["tokens"]?.arrayValue else {
            throw CumulusError(.invalidArguments, "'tokens' must be a list of {recordName?, recordType, fieldName}")
        }
        try checkItemCount(requested.count, of: "tokens")
        let zone = try zone(context.body)
        var fields: [Database.AssetField] = []
        for (index, token) in requested.enumerated() {
            guard token.isObject else {
                throw CumulusError(.invalidArguments, "tokens[\(index)] must be an object {recordName?, recordType, fieldName}")
            }
            guard let fieldName = token["fieldName"]?.stringValue else {
                throw CumulusError(.invalidArguments, "tokens[\(index)] needs a string 'fieldName'")
            }
            guard let recordType = token["recordType"]?.stringValue else {
                throw CumulusError(.invalidArguments, "tokens[\(index)] needs a string 'recordType'")
            }
            var recordName: String?
            if let name = token["recordName"], !name.isNull {
                guard let text = name.stringValue else {
                    throw CumulusError(.invalidArguments, "tokens[\(index)].recordName must be a string")
                }
                recordName = text
            }
            fields.append(Database.AssetField(recordName: recordName ?? UUID.random().uuidString, recordType: recordType, fieldName: fieldName))
        }
        let tickets = try context.database.uploadTickets(for: fields, in: zone, as: context.caller.user)
        let tokens: [JSONValue] = zip(fields, tickets).map { field, ticket in
            [
                "recordName": .string(field.recordName ?? ""), "recordType": .string(field.recordType),
                "fieldName": .string(field.fieldName), "url": .string(context.origin + Route.assetUploadPath + ticket),
            ]
        }
        return APIResponse(json: ["tokens": .array(tokens)])
    }

    /// A POST of a file's bytes to an upload URL (`ticket` is the path after
    /// ``Route/assetUploadPath``): `read` yields the body in chunks (`nil` at its end), and
    /// `declaredLength` is its `Content-Length`, if sent. Answers `{"singleFile":
    /// {fileChecksum, size, referenceChecksum, receipt, wrappingKey: null}}`.
    public func uploadAsset(ticket: String, declaredLength: Int?, read: () async throws -> [UInt8]?) async -> APIResponse {
        let route = Route.assetUploadFile.label
        do {
            if let declaredLength, declaredLength > limits.assetBytes {
                throw CumulusError(
                    .limitExceeded, "an asset of \(declaredLength) bytes; the limit is \(limits.assetBytes) bytes per asset")
            }
            let (stored, receipt, _) = try await container.receiveAsset(
                ticket: ticket, limit: limits.assetBytes, quota: limits.uploadQuota, read: read)
            metrics?.recordRequest(route: route, status: 200)
            logger?.info("POST \(route) 200", metadata: ["bytes": .stringConvertible(stored.size), "asset": .string(stored.checksum.hex)])
            return APIResponse(json: [
                "singleFile": [
                    "fileChecksum": .string(stored.checksum.hex), "size": .int(stored.size),
                    "referenceChecksum": .string(stored.checksum.hex), "receipt": .string(receipt), "wrappingKey": .null,
                ]
            ])
        } catch {
            if (error as? CumulusError)?.code == .limitExceeded { metrics?.recordLimitHit(.assetBytes) }
            let response = namingLeader(Self.errorResponse(error))
            metrics?.recordRequest(route: route, status: response.status)
            logger?.info(
                "POST \(route) \(response.status)", metadata: ["code": .string(response.json["serverErrorCode"]?.stringValue ?? "-")])
            return response
        }
    }

    /// The file a GET of a download URL asks for (`ticket` is the path after
    /// ``Route/assetDownloadPath``); throws what to answer instead (``errorResponse(_:)``).
    public func downloadableAsset(ticket: String) throws -> StoredAsset {
        do {
            let stored = try container.downloadableAsset(ticket: ticket)
            metrics?.recordRequest(route: Route.assetDownloadFile.label, status: 200)
            return stored
        } catch {
            metrics?.recordRequest(route: Route.assetDownloadFile.label, status: Self.errorResponse(error).status)
            throw error
        }
    }

    /// The download URL of each asset in the records a request in `context` reads.
    func downloadURLs(_ context: Context) -> @Sendable (Asset) -> String? {
        let (container, database, origin) = (container, context.database.id, context.origin)
        return { asset in
            container.downloadToken(for: asset, in: database).map { origin + Route.assetDownloadPath + $0 }
        }
    }

    /// `scheme://host[:port]` of the URLs this server hands out: the request's
    /// `Host`, and https when it came over TLS, this server's or (`X-Forwarded-Proto`)
    /// a proxy's, so clients reach the node they asked the way they asked it.
    static func origin(of request: APIRequest) -> String {
        // Bytes, not `contains("/")`: with Foundation imported that is NSString's
        // search, which took more of a request than parsing its body (perf).
        let host = request.headers["host"].flatMap { host in
            host.isEmpty || host.utf8.contains(where: { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: " ") }) ? nil : host
        }
        let scheme = request.overTLS || request.headers["x-forwarded-proto"] == "https" ? "https" : "http"
        return "\(scheme)://\(host ?? "localhost")"
    }
}
