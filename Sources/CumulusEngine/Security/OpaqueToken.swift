import Foundation

/// Something the server hands a client as opaque bytes and takes back later
/// (query cursors, change tokens, notification tokens): carried as base64 on the wire.
public protocol OpaqueToken: Sendable, Hashable {
    /// The token's bytes.
    var bytes: [UInt8] { get }
    /// A token from its bytes, as a client sends them back.
    init(bytes: [UInt8])
}

extension OpaqueToken {
    /// The token as base64 (the HTTP API's `syncToken`, `continuationMarker`, …).
    public var base64: String { Data(bytes).base64EncodedString() }

    /// A token from base64; `nil` if it is not base64.
    public init?(base64: String) {
        guard let data = Data(base64Encoded: base64) else { return nil }
        self.init(bytes: Array(data))
    }
}
