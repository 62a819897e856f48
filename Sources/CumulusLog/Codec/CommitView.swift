import CumulusModel

/// A commit read in place: its header (sequence, time, actor, request ID, client
/// token, event count) parsed from its bytes, its events left encoded until
/// ``commit()`` decodes them. Issue 14's "commit view".
///
/// **Why.** Decoding a commit builds every event: its record, strings and values.
/// That was 3.7–4.3 µs of the ~5.7 µs a sequential read spent per commit, against
/// ~1.1 µs to read and decompress it (`Docs/PERFORMANCE.md`). A reader that needs a
/// commit's header (who, when, how much), or skips most commits, need not pay for
/// the events of the ones it does not use.
///
/// **Lifetime.** Like ``FrameView``, a view borrows the bytes it was parsed from
/// (for a stored frame, the pooled decompression buffer or the LMDB value): use it
/// only inside the closure that was handed it. ``commit()`` returns an owned
/// ``Commit``; the string accessors return owned strings.
///
/// **Checks.** Parsing checks the header as ``CommitCodec/decode(_:)`` does (format,
/// UTF-8, the token flag, an event count the bytes can hold); ``commit()`` checks
/// everything else (each event, the feed positions, no trailing bytes). The layout
/// is `Docs/LOG-FORMAT.md` §5.
public struct CommitView {
    /// The commit's global sequence.
    public let sequence: UInt64
    /// When it was committed.
    public let timestamp: Timestamp
    /// How many events it holds.
    public let eventCount: Int
    /// The whole encoded commit.
    let bytes: UnsafeRawBufferPointer
    let actorBytes: UnsafeRawBufferPointer
    let requestIDBytes: UnsafeRawBufferPointer
    let tokenBytes: UnsafeRawBufferPointer?
    /// Where the first event begins in `bytes`.
    let eventsOffset: Int

    /// Parses the header of an encoded commit (``CommitCodec/encode(_:)``) from
    /// untrusted bytes; throws `invalidArguments` where it is malformed.
    public init(parsing bytes: UnsafeRawBufferPointer) throws {
        var reader = BinaryReader(bytes, context: "commit")
        let version = try reader.u8()
        guard version == CommitCodec.formatVersion else {
            throw reader.failure("unsupported commit format \(version) (this build reads \(CommitCodec.formatVersion))")
        }
        sequence = try reader.u64()
        timestamp = Timestamp(millisecondsSince1970: try reader.zigzag())
        actorBytes = try Self.utf8(&reader)
        requestIDBytes = try Self.utf8(&reader)
        switch try reader.u8() {
        case 0: tokenBytes = nil
        case 1: tokenBytes = try reader.rawSlice(reader.length())
        case let other: throw reader.failure("bad client token flag \(other)")
        }
        // Every event takes at least its tag byte.
        eventCount = try reader.length()
        eventsOffset = reader.offset
        self.bytes = bytes
    }

    private static func utf8(_ reader: inout BinaryReader) throws -> UnsafeRawBufferPointer {
        let slice = try reader.rawSlice(reader.length())
        guard BinaryReader.isValidUTF8(slice) else { throw reader.notUTF8() }
        return slice
    }

    /// The acting user's record name (empty for the system).
    public var actor: String { String(decoding: actorBytes, as: UTF8.self) }

    /// The request's ID.
    public var requestID: String { String(decoding: requestIDBytes, as: UTF8.self) }

    /// The client's `clientChangeTokenData`, if it sent one.
    public var clientChangeTokenData: [UInt8]? { tokenBytes.map { Array($0) } }

    /// Whether the actor is `user`, compared in place: a filter by user skips other
    /// users' commits without building a string for each.
    public func isActor(_ user: String) -> Bool {
        var user = user
        return user.withUTF8 { $0.elementsEqual(actorBytes) }
    }

    /// The whole commit, decoded and checked as ``CommitCodec/decode(_:)`` does; a
    /// malformed one throws ``LogError/corruptFrame(sequence:reason:)``, as reading
    /// its frame whole would.
    public func commit() throws(LogError) -> Commit {
        do {
            return try decodeCommit()
        } catch {
            throw .corruptFrame(sequence: sequence, reason: "\(error)")
        }
    }

    /// ``commit()`` with the decoder's own error (`invalidArguments`).
    func decodeCommit() throws -> Commit {
        var reader = BinaryReader(bytes, context: "commit")
        try reader.seek(to: eventsOffset)
        return try CommitCodec.decodeBody(of: self, from: &reader)
    }
}
