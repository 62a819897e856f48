import CumulusStorage

/// A frame made by another log, parsed, decompressed and decoded before the write
/// transaction that appends it: the part of appending a follower's batch or a
/// replay's that needs no transaction, so it can run on another thread while the
/// writer appends the batch before (``FrameDecoder``, ``LogStore/appendFrames(_:decoded:applying:)``).
///
/// Decoding ahead checks nothing about where the frame goes: the append still checks
/// its sequence, its chain hash and its feed positions against the log's head, as it
/// does for a frame it decodes itself.
public struct DecodedFrame: Sendable {
    /// The frame as received, stored byte for byte.
    public let bytes: [UInt8]
    /// Its parsed header and payload.
    let frame: Frame
    /// The commit it holds.
    public let commit: Commit
    /// The commit's encoded bytes, which the chain hash covers.
    let commitBytes: [UInt8]
    /// The hash this frame's chain hash was found to follow from (the chain hash of
    /// the frame decoded before it), if checked ahead: an append whose head holds
    /// that hash need not hash the commit again.
    let chainsFrom: [UInt8]?
}

/// Decodes a run of frames ahead of their append, in order, tracking the
/// dictionaries the run installs itself: a frame compressed with a dictionary
/// installed earlier in the same run (not yet in any log) still decodes.
///
/// Not thread-safe: one decoder per run, used by one thread at a time.
public struct FrameDecoder: Sendable {
    /// The log whose dictionaries (and decompression contexts) frames are decoded with.
    let store: LogStore
    /// Dictionaries installed by frames this decoder has decoded.
    private var installed: [UInt32: ZstdDictionary] = [:]
    /// The sequence and chain hash of the frame decoded last.
    private var previous: (sequence: UInt64, chainHash: [UInt8])?

    /// A decoder using `store`'s dictionaries and those of the frames it decodes.
    public init(store: LogStore) {
        self.store = store
    }

    /// `frameBytes` decoded, or `nil` if it is damaged or names a dictionary not
    /// known yet: the append decodes such a frame itself and refuses it as it always
    /// has, so a frame's error reads the same whether or not it was decoded ahead.
    public mutating func decode(_ frameBytes: [UInt8]) -> DecodedFrame? {
        guard let frame = try? Frame(parsing: frameBytes, expectedSequence: nil),
            let (commit, commitBytes) = try? store.decodeCommit(frame, extraDictionaries: installed)
        else { return nil }
        for event in commit.events {
            guard case .dictionaryInstalled(let id, let bytes) = event, id != 0,
                let dictionary = try? ZstdDictionary(bytes: bytes)
            else { continue }
            installed[id] = dictionary
        }
        // The chain checked here, off the writer's thread, when the frames follow on.
        var chainsFrom: [UInt8]?
        if let previous, previous.sequence + 1 == frame.sequence,
            LogStore.chainHash(previous: previous.chainHash, commitBytes: commitBytes) == frame.chainHash
        {
            chainsFrom = previous.chainHash
        }
        previous = (frame.sequence, frame.chainHash)
        return DecodedFrame(bytes: frameBytes, frame: frame, commit: commit, commitBytes: commitBytes, chainsFrom: chainsFrom)
    }
}
