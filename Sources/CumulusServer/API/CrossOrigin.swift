import CumulusModel

/// Cross-origin requests from browser apps (CORS), as CloudKit's API tokens allow
/// them: a token names the web origins whose pages may call with it (`cumulus tokens
/// create --origin`), and a request carrying `Origin` gets
/// `Access-Control-Allow-Origin` only when its `ckAPIToken` allows that very origin.
/// Nothing else is ever allowed: no `*`, no origin reflected unless the token names
/// it, and no `Access-Control-Allow-Credentials` (credentials travel in the query
/// string, not in cookies, so a browser has no ambient credential to send).
///
/// CloudKit JS sends `text/plain` bodies with no custom header, which browsers send
/// without a preflight; a preflight (`OPTIONS`) comes for JSON bodies and signed
/// requests, and is answered `204` for an allowed origin, `403` for any other.
public enum CrossOrigin {
    /// The request header naming the page's origin.
    static let originHeader = "origin"
    /// The methods the API serves.
    static let allowedMethods = "GET, POST"
    /// The request headers a page may send: a JSON content type and the
    /// server-to-server signature's headers.
    static let allowedHeaders = (["Content-Type"] + ServerSignature.headerNames).joined(separator: ", ")
    /// The answer headers a page may read beyond the safelisted ones: what it passes to
    /// a follower to read its own writes.
    static let exposedHeaders = "X-Cumulus-Sequence, X-Cumulus-Epoch"
    /// How long a browser may keep a preflight's answer. A token revoked meanwhile
    /// still fails every request; only the preflight is skipped.
    static let maxAgeSeconds = 600
    /// The longest origin accepted: a scheme, a DNS name (at most 253 bytes) and a port.
    static let maxOriginBytes = 300

    /// The headers answering a request from `origin` that its API token allows.
    static func allowing(_ origin: String) -> [String: String] {
        [
            "access-control-allow-origin": origin, "vary": "Origin",
            "access-control-expose-headers": exposedHeaders,
        ]
    }

    /// The headers answering an allowed preflight from `origin`.
    static func allowingPreflight(_ origin: String) -> [String: String] {
        allowing(origin).merging([
            "access-control-allow-methods": allowedMethods, "access-control-allow-headers": allowedHeaders,
            "access-control-max-age": String(maxAgeSeconds),
        ]) { _, new in new }
    }

    /// `text` as a browser sends it in `Origin`: `http` or `https`, `://`, a host, and a
    /// port unless it is the scheme's default, scheme and host lower-cased; one trailing
    /// `/` is forgiven. Anything else (a path, a query, user info, `*`, `null`) is
    /// `invalidArguments`: it could never equal an `Origin` header, or would allow too much.
    public static func normalizedOrigin(_ text: String) throws -> String {
        func refuse(_ why: String) -> CumulusError {
            CumulusError(
                .invalidArguments,
                "'\(text.prefix(80))' is not a web origin (\(why)); give one like https://app.example.com or http://localhost:8080")
        }
        guard text.utf8.count <= maxOriginBytes else { throw refuse("longer than \(maxOriginBytes) bytes") }
        guard let separator = text.range(of: "://") else { throw refuse("no scheme") }
        let scheme = text[..<separator.lowerBound].lowercased()
        guard let defaultPort = ["http": 80, "https": 443][scheme] else { throw refuse("the scheme is http or https") }
        var rest = Substring(text[separator.upperBound...])
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        var host = rest
        var port: Int?
        // A DNS name or IPv4 address; an IPv6 literal also takes ':' within brackets.
        var hostCharacters = "-."
        if rest.hasPrefix("[") {
            hostCharacters = "[]:"
            // An IPv6 literal: the port, if any, follows the closing bracket.
            guard let close = rest.firstIndex(of: "]") else { throw refuse("an unclosed IPv6 address") }
            host = rest[...close]
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":"), let number = Int(after.dropFirst()) else { throw refuse("a bad port") }
                port = number
            }
        } else if let colon = rest.lastIndex(of: ":") {
            host = rest[..<colon]
            guard let number = Int(rest[rest.index(after: colon)...]) else { throw refuse("a bad port") }
            port = number
        }
        guard !host.isEmpty, host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || hostCharacters.contains($0)) }) else {
            throw refuse("a host of letters, digits, '-' and '.', with no path, query or user")
        }
        if let port, !(1...65_535).contains(port) { throw refuse("a port from 1 to 65535") }
        let portText = port.flatMap { $0 == defaultPort ? nil : ":\($0)" } ?? ""
        return "\(scheme)://\(host.lowercased())\(portText)"
    }
}
