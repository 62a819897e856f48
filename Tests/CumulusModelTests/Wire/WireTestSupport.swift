import Foundation
import Testing
@testable import CumulusModel

/// `json` written to bytes and parsed back, so every round trip also exercises the JSON codec.
func throughBytes(_ json: JSONValue) throws -> JSONValue {
    try JSONValue.parse(json.serialized())
}

/// Asserts `body` throws `invalidArguments` whose message contains `fragment`.
func expectWireError(_ fragment: String, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) {
    do {
        try body()
        Issue.record("expected an error mentioning \(fragment)", sourceLocation: sourceLocation)
    } catch let error as CumulusError {
        #expect(error.code == .invalidArguments, "\(error)", sourceLocation: sourceLocation)
        #expect(error.message.contains(fragment), "\(error.message)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("unexpected \(error)", sourceLocation: sourceLocation)
    }
}
