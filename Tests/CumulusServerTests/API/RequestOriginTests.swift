import Testing
@testable import CumulusServer

@Suite("Request origin")
struct RequestOriginTests {
    private func origin(host: String?, forwardedProto: String? = nil, tls: Bool = false) -> String {
        var headers: [String: String] = [:]
        if let host { headers["host"] = host }
        if let forwardedProto { headers["x-forwarded-proto"] = forwardedProto }
        var request = APIRequest(method: "GET", path: "/", headers: headers)
        request.overTLS = tls
        return CloudKitAPI.origin(of: request)
    }

    @Test("the Host header names the origin, its scheme from TLS or X-Forwarded-Proto")
    func fromHost() {
        #expect(origin(host: "cumulus.example:8765") == "http://cumulus.example:8765")
        #expect(origin(host: "cumulus.example", tls: true) == "https://cumulus.example")
        #expect(origin(host: "[::1]:8080", forwardedProto: "https") == "https://[::1]:8080")
    }

    @Test("a missing, empty, or path- or space-bearing Host is not trusted: localhost stands in")
    func untrustedHost() {
        #expect(origin(host: nil) == "http://localhost")
        #expect(origin(host: "") == "http://localhost")
        #expect(origin(host: "evil.example/assets") == "http://localhost")
        #expect(origin(host: "evil.example x") == "http://localhost")
    }
}
