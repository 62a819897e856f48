import CumulusEngine
import HTTPTypes
import Hummingbird
import NIOCore

/// The byte routes of assets (``Route/assetUploadFile``, ``Route/assetDownloadFile``): streamed both ways, so neither a 50 MB upload
/// nor a download is held whole in memory, and outside the 4 MiB JSON body limit and
/// its budget, which are for bodies that must be parsed whole.
extension CumulusHTTPServer {
    /// A POST of a file to its upload URL, or a GET (or HEAD) of a download URL:
    /// `route` is the one of the two that the path names.
    static func assetExchange(_ request: Request, route: Route, api: CloudKitAPI) async -> Response {
        let path = request.uri.path
        if route == .assetUploadFile, route.takes(request.method.rawValue) {
            let ticket = String(path.dropFirst(Route.assetUploadPath.count))
            let declared = request.headers[.contentLength].flatMap { Int($0) }
            var chunks = request.body.makeAsyncIterator()
            let answer = await api.uploadAsset(ticket: ticket, declaredLength: declared) {
                guard let buffer = try await chunks.next() else { return nil }
                return Array(buffer.readableBytesView)
            }
            return json(answer)
        }
        guard route == .assetDownloadFile, route.takes(request.method.rawValue) else {
            return json(.error(
                .notFound, "no such endpoint: \(request.method) \(path); upload URLs take POST, download URLs GET"))
        }
        let ticket = String(path.dropFirst(Route.assetDownloadPath.count))
        let stored: StoredAsset
        do {
            stored = try api.downloadableAsset(ticket: ticket)
        } catch {
            return json(CloudKitAPI.errorResponse(error))
        }
        var fields = HTTPFields()
        fields[.contentType] = "application/octet-stream"
        fields[.cacheControl] = "private, max-age=\(AssetDownloadTicket.lifetimeSeconds), immutable"
        guard request.method == .get else {
            fields[.contentLength] = String(stored.size)
            return Response(status: .ok, headers: fields, body: ResponseBody())
        }
        let files = api.container.assets
        return Response(status: .ok, headers: fields, body: ResponseBody(contentLength: Int(stored.size)) { writer in
            let reader = try AssetReader(stored.checksum, in: files)
            while let chunk = try reader.next() { try await writer.write(ByteBuffer(bytes: chunk)) }
            try await writer.finish(nil)
        })
    }
}
