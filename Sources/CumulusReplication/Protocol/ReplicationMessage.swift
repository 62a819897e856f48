import CumulusLog
import CumulusModel
import Foundation

/// One message of the replication stream a leader sends a follower
/// (`GET /replication/stream`, Docs/OPERATIONS.md "Replication").
///
/// On the wire: `u8 kind ‖ u32 length ‖ payload`, big-endian. Frames travel exactly
/// as the leader stored them — no re-compression — so the follower can check each
/// frame's checksum and chain link itself and store the same bytes.
public enum ReplicationMessage: Sendable, Equatable {
    /// The leader's stored frames, in sequence order, and its head when it sent them.
    case frames([[UInt8]], leaderHead: UInt64)
    /// Nothing new; the leader is alive, at `leaderHead`, at time `now`.
    case heartbeat(leaderHead: UInt64, now: Timestamp)
    /// The leader's credentials and server secret (`auth` and `secrets` tables), sent
    /// when a stream opens and whenever they change: they are not log events.
    case configuration(ReplicatedConfiguration)
    /// The leader stops the stream for this reason (for instance, it was superseded).
    case failure(String)

    /// The largest message accepted, derived from the one bound on commits
    /// (``Frame/maxUncompressedLength``, which the writer enforces): a message holds
    /// one frame of at most ``Frame/maxEncodedLength`` bytes and its 16 bytes of
    /// framing, or frames of at most ``ReplicationLeader/bytesPerMessage`` together.
    /// A hostile or broken peer cannot make a follower allocate more than this for
    /// one message; a longer one is refused from its 5-byte header, before its
    /// payload is buffered.
    public static let maxLength = Frame.maxEncodedLength + 16

    enum Kind: UInt8 {
        case frames = 1, heartbeat = 2, configuration = 3, failure = 4
    }

    /// The message's bytes on the wire.
    public func encoded() -> [UInt8] {
        var writer = BinaryWriter()
        let kind: Kind
        switch self {
        case .frames(let frames, let head):
            kind = .frames
            writer.u64(head)
            writer.u32(UInt32(frames.count))
            for frame in frames {
                writer.u32(UInt32(frame.count))
                writer.raw(frame)
            }
        case .heartbeat(let head, let now):
            kind = .heartbeat
            writer.u64(head)
            writer.u64(UInt64(bitPattern: now.millisecondsSince1970))
        case .configuration(let configuration):
            kind = .configuration
            configuration.encode(into: &writer)
        case .failure(let reason):
            kind = .failure
            writer.raw(Array(reason.utf8))
        }
        let payload = writer.bytes
        var message: [UInt8] = [kind.rawValue]
        message.reserveCapacity(payload.count + 5)
        withUnsafeBytes(of: UInt32(payload.count).bigEndian) { message.append(contentsOf: $0) }
        message.append(contentsOf: payload)
        return message
    }

    /// Decodes one message's payload.
    static func decode(kind rawKind: UInt8, payload: ArraySlice<UInt8>) throws -> ReplicationMessage {
        guard let kind = Kind(rawValue: rawKind) else {
            throw ReplicationError.protocolViolation("unknown message kind \(rawKind)")
        }
        do {
            return try Array(payload).withUnsafeBytes { buffer in
                var reader = BinaryReader(buffer, context: "replication message")
                let message: ReplicationMessage
                switch kind {
                case .frames:
                    let head = try reader.u64()
                    let count = Int(try reader.u32())
                    var frames: [[UInt8]] = []
                    frames.reserveCapacity(min(count, 4096))
                    for _ in 0..<count {
                        let length = Int(try reader.u32())
                        frames.append(try reader.raw(length))
                    }
                    message = .frames(frames, leaderHead: head)
                case .heartbeat:
                    let head = try reader.u64()
                    let now = Timestamp(millisecondsSince1970: Int64(bitPattern: try reader.u64()))
                    message = .heartbeat(leaderHead: head, now: now)
                case .configuration:
                    message = .configuration(try ReplicatedConfiguration.decode(from: &reader))
                case .failure:
                    message = .failure(String(decoding: try reader.raw(reader.remaining), as: UTF8.self))
                }
                guard reader.remaining == 0 else {
                    throw ReplicationError.protocolViolation("\(reader.remaining) stray bytes after a \(kind) message")
                }
                return message
            }
        } catch let error as ReplicationError {
            throw error
        } catch {
            throw ReplicationError.protocolViolation("malformed \(kind) message: \(error)")
        }
    }
}

/// Splits a byte stream into ``ReplicationMessage``s, whatever the chunking of the
/// transport. Refuses an over-long or unknown message instead of buffering it.
public struct ReplicationMessageDecoder: Sendable {
    private var buffer: [UInt8] = []
    private var start = 0

    /// An empty decoder.
    public init() {}

    /// Adds received bytes.
    public mutating func append(_ bytes: some Sequence<UInt8>) {
        buffer.append(contentsOf: bytes)
    }

    /// The next complete message, or `nil` until more bytes arrive.
    public mutating func next() throws -> ReplicationMessage? {
        guard buffer.count - start >= 5 else { return nil }
        let kind = buffer[start]
        var length = 0
        for index in 1...4 { length = length << 8 | Int(buffer[start + index]) }
        guard length <= ReplicationMessage.maxLength else {
            throw ReplicationError.protocolViolation("a message of \(length) bytes is over the \(ReplicationMessage.maxLength)-byte limit")
        }
        guard buffer.count - start - 5 >= length else { return nil }
        let payload = buffer[(start + 5)..<(start + 5 + length)]
        start += 5 + length
        let message = try ReplicationMessage.decode(kind: kind, payload: payload)
        // Drop consumed bytes once they dominate, so the buffer stays small.
        if start > 1 << 20 || start == buffer.count {
            buffer.removeFirst(start)
            start = 0
        }
        return message
    }

    /// Bytes received but not yet part of a whole message.
    public var pendingBytes: Int { buffer.count - start }
}
