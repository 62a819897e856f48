import CumulusLog
import CumulusStorage

/// A run of frames from another log (a leader's, or the source of a replay) made ready
/// ahead of the transaction that appends them: each frame decoded (``FrameDecoder``)
/// and each decoded commit's saved records derived (``Views/derive(_:in:)``).
///
/// **Why.** Decoding a frame and deriving its records need nothing of the write
/// transaction, and were about half of applying a batch. Made on another thread while
/// the writer applies the batch before, they take that half off the writer, the one
/// thread every follower, replay and rebuild waits on.
///
/// **Correctness.** Nothing here is trusted to be current: the append checks each
/// decoded frame against the head as it would the frame's bytes, and a record derived
/// under a schema that the batch being written (or an earlier commit of this one)
/// changed is derived again when applied. So the views come out byte for byte as if
/// the frames had been appended and applied one by one.
public struct PreparedFrames: Sendable {
    /// The frames as received.
    public let frames: [[UInt8]]
    /// Each frame decoded (`nil`: it is decoded when appended, which refuses it).
    public let decoded: [DecodedFrame?]
    /// What each decoded commit's saved records derive to.
    public let derived: [CommitDerivations?]

    /// Decodes `frames` with `decoder` (which tracks the dictionaries and chain the run
    /// has reached, for the run after) and derives them under the schemas `views`
    /// holds in `environment` now.
    public init(_ frames: [[UInt8]], decoder: inout FrameDecoder, views: Views, environment: LMDBEnvironment) throws {
        self.frames = frames
        var decoded: [DecodedFrame?] = []
        decoded.reserveCapacity(frames.count)
        for frame in frames { decoded.append(decoder.decode(frame)) }
        self.decoded = decoded
        derived = try environment.read { txn in views.derive(decoded.map { $0?.commit }, in: txn) }
    }

    /// Applies the commit at `index` of this run (appended in `txn`) to `views`, with
    /// what was derived of it ahead.
    public func apply(_ index: Int, _ commit: Commit, to views: Views, in txn: LMDBWriteTransaction) throws {
        try views.apply(commit, derived: index < derived.count ? derived[index] : nil, in: txn)
    }
}
