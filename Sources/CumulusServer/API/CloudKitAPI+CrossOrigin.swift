import CumulusModel

/// CORS for browser apps (``CrossOrigin``): which origin, if any, an answer allows,
/// decided by the request's own API token.
extension CloudKitAPI {
    /// The origin `request` came from when its `ckAPIToken` allows it, else `nil`:
    /// no `Origin`, no token, a token that is not one (or cannot be read), or one that
    /// does not name this origin.
    func allowedOrigin(of request: APIRequest) -> String? {
        guard let origin = request.headers[CrossOrigin.originHeader], !origin.isEmpty,
            let token = request.query["ckAPIToken"], !token.isEmpty,
            let scope = try? auth.scope(forAPIToken: token)
        else { return nil }
        // Compared exactly with the stored, normalized form: a browser sends its
        // origin in that form, and nothing looser is ever echoed back.
        return scope.origins.contains(origin) ? origin : nil
    }

    /// The CORS headers for the answer to `request`: the allowing ones when its token
    /// allows its origin; otherwise, for a request with an `Origin`, only `Vary` (so a
    /// cache never hands this answer to another origin), and none without one.
    func crossOriginHeaders(for request: APIRequest) -> [String: String] {
        if let origin = allowedOrigin(of: request) { return CrossOrigin.allowing(origin) }
        return request.headers[CrossOrigin.originHeader] == nil ? [:] : ["vary": "Origin"]
    }

    /// A preflight (`OPTIONS`): `204` with what may be sent when the request's API
    /// token allows its origin, else `ACCESS_DENIED` (403) with no CORS header, which
    /// the browser takes as a refusal. Charged to the address's rate limit, as any
    /// request that is not signed in is, so a preflight is no faster way to guess tokens.
    func preflight(_ request: APIRequest) throws -> APIResponse {
        try chargeAddress(of: request)
        guard let origin = allowedOrigin(of: request) else {
            return .error(
                .accessDenied,
                "OPTIONS is answered only as a CORS preflight from an origin the ckAPIToken allows; "
                    + "mint a token for the page's origin with `cumulus tokens create --origin ORIGIN`")
        }
        var answer = APIResponse(status: 204, json: .null)
        answer.headers = CrossOrigin.allowingPreflight(origin)
        return answer
    }
}
