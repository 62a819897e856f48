import CumulusLog
import CumulusModel
import CumulusStorage

/// Frames and commits as a follower takes them from its leader (and `replay` from
/// a source log): appended with `LogStore.appendFrames` and applied to the views
/// with `Views.apply`, in a transaction that is then rolled back, on an empty log.
///
/// The first byte picks what the rest is:
/// - `0 mod 3`: a stored frame, as received;
/// - `1 mod 3`: a commit's bytes. Decoded, they must encode to a commit that
///   decodes the same; the commit is applied to the views directly (its feed
///   positions would rarely follow this log's), then framed raw with the right
///   chain hash and appended;
/// - `2 mod 3`: a commit's bytes framed zstd-compressed with the right chain hash.
///
/// A follower trusts its leader's commits once their chain checks, so bad bytes
/// here mean a broken or hostile leader; either must end in an error, never a crash.
enum LogFrameTarget {
    /// Thrown after a successful apply, so nothing stays and every input meets the
    /// same empty log.
    struct RolledBack: Error {}

    /// An empty container that nothing ever commits to.
    static let world: FuzzWorld? = try? FuzzWorld(label: "log")
    static let compressor = try? ZstdCompressor()

    static func run(_ input: [UInt8]) -> FuzzOutcome {
        guard let world, let compressor else { return .broken("the fuzz world could not be created") }
        guard let mode = input.first else { return .refused("empty") }
        let bytes = Array(input.dropFirst())
        let store = world.container.store
        let views = world.container.views
        func append(_ frame: [UInt8]) -> FuzzOutcome {
            do {
                _ = try store.appendFrames([frame]) { commit, txn in
                    try views.apply(commit, in: txn)
                    throw RolledBack()
                }
                return .broken("the transaction was not rolled back")
            } catch is RolledBack {
                return .accepted
            } catch {
                return .refused("\(error)")
            }
        }
        func frame(_ payload: [UInt8], compressed: Bool) -> [UInt8] {
            Frame(
                sequence: store.head.sequence + 1, dictionaryID: 0, isCompressed: compressed, uncompressedLength: bytes.count,
                chainHash: LogStore.chainHash(previous: store.head.hash, commitBytes: bytes), payload: payload
            ).encoded()
        }
        switch mode % 3 {
        case 0:
            return append(bytes)
        case 1:
            let commit: Commit
            do {
                commit = try CommitCodec.decode(bytes)
            } catch {
                return append(frame(bytes, compressed: false))
            }
            do {
                guard try CommitCodec.decode(try CommitCodec.encode(commit)) == commit else {
                    return .broken("a decoded commit does not survive its own encoding")
                }
            } catch {
                return .broken("a decoded commit does not encode: \(error)")
            }
            do {
                try store.environment.write { txn in
                    try views.apply(commit, in: txn)
                    throw RolledBack()
                }
            } catch is RolledBack {
            } catch {
                return .refused("\(error)")
            }
            // Applied: the append below mostly stops at the feed positions, which is fine.
            let appended = append(frame(bytes, compressed: false))
            return appended.isBroken ? appended : .accepted
        default:
            guard let payload = try? compressor.compress(bytes) else { return .refused("incompressible") }
            return append(frame(payload, compressed: true))
        }
    }

    /// The seed log's first frame and first commit compressed (the only ones that
    /// follow an empty log), and each of its commits as bytes.
    static func seeds() async throws -> [[UInt8]] {
        let log = try await SeedLog.make()
        return log.frames.prefix(1).map { [0] + $0 } + log.commits.prefix(1).map { [2] + $0 } + log.commits.map { [1] + $0 }
    }
}
