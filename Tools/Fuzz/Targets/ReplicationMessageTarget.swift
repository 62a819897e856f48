import CumulusReplication

/// The replication stream as a follower reads it off the socket: the input's first
/// byte sets the size of the pieces it arrives in (1–64 bytes, or all at once), the
/// rest is the stream. Every message decoded must encode to bytes that decode to it
/// again, and a refusal must be a protocol violation, never anything else.
enum ReplicationMessageTarget {
    static func run(_ input: [UInt8]) -> FuzzOutcome {
        guard let first = input.first else { return .refused("empty") }
        let stream = input.dropFirst()
        let piece = first == 0 ? max(stream.count, 1) : Int(first % 64) + 1
        var decoder = ReplicationMessageDecoder()
        var messages = 0
        do {
            var start = stream.startIndex
            while start < stream.endIndex {
                let end = min(start + piece, stream.endIndex)
                decoder.append(stream[start..<end])
                start = end
                while let message = try decoder.next() {
                    messages += 1
                    var again = ReplicationMessageDecoder()
                    again.append(message.encoded())
                    guard try again.next() == message, try again.next() == nil else {
                        return .broken("a decoded \(message) does not survive its own encoding")
                    }
                }
            }
        } catch let error as ReplicationError {
            guard case .protocolViolation = error else { return .broken("refused with \(error), not a protocol violation") }
            return .refused("\(error)")
        } catch {
            return .broken("threw \(type(of: error)): \(error)")
        }
        return messages > 0 ? .accepted : .refused("no complete message")
    }

    /// A frames message of a real log, a heartbeat, a failure and a leader's
    /// configuration, each as a stream delivered at once and in 7-byte pieces.
    static func seeds() async throws -> [[UInt8]] {
        let log = try await SeedLog.make()
        let messages: [ReplicationMessage] = [
            .frames(log.frames, leaderHead: UInt64(log.frames.count)),
            .heartbeat(leaderHead: 12, now: .init(millisecondsSince1970: 1_790_000_000_000)),
            .failure("superseded by epoch 3"),
            .configuration(log.configuration),
        ]
        return messages.flatMap { message in [[0] + message.encoded(), [6] + message.encoded()] }
    }
}
