import CumulusEngine
import CumulusLog
import Foundation

/// What a node says of itself (`GET /replication/hello`): which log it holds, in
/// which epoch, and how far. A follower reads it before seeding or streaming.
public struct ReplicationHello: Sendable, Codable, Hashable {
    /// The log ID, in hexadecimal.
    public var logID: String
    /// The leader epoch.
    public var epoch: UInt64
    /// The last sequence it holds.
    public var head: UInt64
    /// The chain hash of that commit, in hexadecimal.
    public var headHash: String
    /// `leader`, `follower` or `read-only`.
    public var role: String

    /// A hello.
    public init(logID: String, epoch: UInt64, head: UInt64, headHash: String, role: String) {
        self.logID = logID
        self.epoch = epoch
        self.head = head
        self.headHash = headHash
        self.role = role
    }

    /// The identity as bytes, if the hex is well formed.
    public var identity: LogStore.Identity? {
        guard let bytes = Hex.decode(logID), bytes.count == 16, epoch >= 1 else { return nil }
        return LogStore.Identity(logID: bytes, epoch: epoch)
    }
}

/// Lower-case hexadecimal for IDs and hashes in URLs and JSON.
public enum Hex {
    /// `bytes` as lower-case hex.
    public static func encode(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of well-formed hex (even length, `0-9a-fA-F`), or `nil`.
    public static func decode(_ text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 2 == 0, chars.count <= 1024 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(chars.count / 2)
        var index = 0
        while index < chars.count {
            guard let high = nibble(chars[index]), let low = nibble(chars[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }
}

extension ReplicationHello {
    /// What `container` says of itself.
    public static func of(_ container: Container) -> ReplicationHello {
        let store = container.store
        let head = store.head
        return ReplicationHello(
            logID: Hex.encode(store.logID), epoch: store.epoch, head: head.sequence, headHash: Hex.encode(head.hash),
            role: container.supersededBy == nil ? container.role.name : "superseded")
    }
}
