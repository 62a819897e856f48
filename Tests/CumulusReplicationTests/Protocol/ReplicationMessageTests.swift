import CumulusLog
import CumulusModel
import Testing

@testable import CumulusReplication

@Suite("Replication messages")
struct ReplicationMessageTests {
    static let samples: [ReplicationMessage] = [
        .frames([[1, 2, 3], [], Array(repeating: 7, count: 1000)], leaderHead: 42),
        .heartbeat(leaderHead: 9, now: Timestamp(millisecondsSince1970: 1_700_000_000_123)),
        .configuration(ReplicatedConfiguration(entries: [
            "auth": [.init(key: [0x61, 1], value: Array("iCloud.x".utf8))],
            "secrets": [.init(key: Array("server".utf8), value: Array(repeating: 3, count: 32))],
        ])),
        .failure("superseded by epoch 2"),
    ]

    @Test("every message survives encoding, whatever the chunking")
    func roundTrip() throws {
        let stream = Self.samples.flatMap { $0.encoded() }
        for chunkSize in [1, 3, 64, stream.count] {
            var decoder = ReplicationMessageDecoder()
            var decoded: [ReplicationMessage] = []
            var offset = 0
            while offset < stream.count {
                decoder.append(stream[offset..<min(offset + chunkSize, stream.count)])
                offset += chunkSize
                while let message = try decoder.next() { decoded.append(message) }
            }
            #expect(decoded == Self.samples)
            #expect(decoder.pendingBytes == 0)
        }
    }

    @Test("an unknown kind is refused")
    func unknownKind() {
        var decoder = ReplicationMessageDecoder()
        decoder.append([99, 0, 0, 0, 0])
        #expect(throws: ReplicationError.self) { try decoder.next() }
    }

    @Test("an over-long message is refused before it is buffered")
    func overLong() {
        var decoder = ReplicationMessageDecoder()
        decoder.append([1, 0xFF, 0xFF, 0xFF, 0xFF])
        #expect(throws: ReplicationError.self) { try decoder.next() }
    }

    /// A frames message's header claiming a payload of `length` bytes.
    static func header(claiming length: Int) -> [UInt8] {
        [1] + withUnsafeBytes(of: UInt32(length).bigEndian, Array.init)
    }

    @Test("the largest frame a log writes fits one message; one byte more is refused from the header alone")
    func limitFollowsTheLargestCommit() throws {
        // One frame of the largest size, with the message's own 16 bytes around it.
        #expect(ReplicationMessage.maxLength == Frame.maxEncodedLength + 16)
        // Frames the leader batches stay under it too.
        #expect(ReplicationLeader.bytesPerMessage + 4 * ReplicationLeader.framesPerMessage + 12 <= ReplicationMessage.maxLength)
        var accepting = ReplicationMessageDecoder()
        accepting.append(Self.header(claiming: ReplicationMessage.maxLength))
        #expect(try accepting.next() == nil)  // waits for the payload
        var refusing = ReplicationMessageDecoder()
        refusing.append(Self.header(claiming: ReplicationMessage.maxLength + 1))
        #expect(throws: ReplicationError.self) { try refusing.next() }
        #expect(refusing.pendingBytes == 5)
    }

    @Test("a frames message that lies about its counts is refused")
    func truncatedFrames() {
        // Claims 5 frames, holds one byte of the first.
        var payload: [UInt8] = Array(repeating: 0, count: 8) + [0, 0, 0, 5] + [0, 0, 0, 9, 1]
        payload = [1] + withUnsafeBytes(of: UInt32(payload.count).bigEndian, Array.init) + payload
        var decoder = ReplicationMessageDecoder()
        decoder.append(payload)
        #expect(throws: ReplicationError.self) { try decoder.next() }
    }

    @Test("stray bytes after a message are refused")
    func strayBytes() {
        var heartbeat = ReplicationMessage.heartbeat(leaderHead: 1, now: Timestamp(millisecondsSince1970: 0)).encoded()
        heartbeat[4] += 1
        heartbeat.append(0)
        var decoder = ReplicationMessageDecoder()
        decoder.append(heartbeat)
        #expect(throws: ReplicationError.self) { try decoder.next() }
    }
}
