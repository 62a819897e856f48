import CumulusModel
import CumulusStorage
import Foundation

/// Whether a data directory's views environment can be trusted when it is opened, and
/// the views syncs that make it so (``DataLayout``: the views are committed without
/// fsync).
///
/// A crash of the process loses nothing of the views: their pages are in the
/// operating system's cache, and LMDB keeps its transactions atomic without the
/// flush. A crash of the machine may tear them (a meta page on disk before the pages
/// it names), and LMDB has no page checksums to tell. So the log environment keeps,
/// durable, a **record** of the views (`meta` key `views`):
///
/// ```
/// views  boot ID (16 bytes, /proc/sys/kernel/random/boot_id) ‖ u8 closed cleanly (0/1)
///        ‖ u64 the views' applied sequence at their last sync
/// ```
///
/// written by every **views sync** (``LogStore/syncViews(closing:)``: flush the
/// views environment, then record the sequence it covers and the boot it happened
/// in), which a node runs when it opens, every few seconds while it writes
/// (``ViewsSyncer``), and when it closes (then marked clean). On open, the views
/// are trusted (``verdict(record:boot:logHead:)``) if they were closed cleanly, if
/// the machine has not restarted since the record (same boot: every committed page
/// is still in the cache or on disk), or if nothing was committed after the last
/// sync (its sequence is the log's head). Otherwise they are **torn**: the views
/// environment is never opened, but deleted, and made again from the log
/// (``LogStore/open(path:options:)``).
public enum ViewsDurability {
    /// What the log environment records of the views.
    public struct Record: Sendable, Hashable {
        /// The boot the views were last synced (or opened) in.
        public var boot: [UInt8]
        /// Whether the node closed them cleanly after that sync.
        public var clean: Bool
        /// The views' applied sequence at that sync.
        public var synced: UInt64

        /// A record.
        public init(boot: [UInt8], clean: Bool, synced: UInt64) {
            self.boot = boot
            self.clean = clean
            self.synced = synced
        }

        /// The record as `meta` stores it.
        public var bytes: [UInt8] { boot + [clean ? 1 : 0] + BigEndian.bytes(synced) }

        /// The record `bytes` hold, or `nil` if they are not one.
        public init?(_ bytes: [UInt8]) {
            guard bytes.count == 25, bytes[16] <= 1, let synced = BigEndian.decode(UInt64.self, from: bytes, at: 17) else {
                return nil
            }
            self.init(boot: Array(bytes[..<16]), clean: bytes[16] == 1, synced: synced)
        }
    }

    /// What opening a data directory does with its views environment.
    public enum Verdict: Sendable, Hashable {
        /// Open it.
        case trusted
        /// Never open it: delete it and make the views again from the log.
        case torn
    }

    /// The `meta` key of the record.
    public static let metaKey: [UInt8] = Array("views".utf8)

    /// Whether views whose last record is `record` can be opened in boot `boot` with
    /// the log at `logHead`. No record: a data directory of storage format 1 (whose
    /// views were durable) or a new one.
    public static func verdict(record: Record?, boot: [UInt8], logHead: UInt64) -> Verdict {
        guard let record else { return .trusted }
        return record.clean || record.boot == boot || record.synced == logHead ? .trusted : .torn
    }

    /// This boot's ID: 16 bytes from the kernel's `boot_id`, which changes at every
    /// boot. Where it cannot be read, 16 zero bytes: every open is then taken for
    /// the same boot, so only a clean close or an idle log makes views trusted across
    /// a restart of the machine (and views torn by one go unnoticed): documented as
    /// Linux-only.
    public static let currentBoot: [UInt8] = {
        guard let text = try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8) else {
            return [UInt8](repeating: 0, count: 16)
        }
        let hex = text.filter(\.isHexDigit)
        guard hex.count == 32, let bytes = Hex.decode(String(hex)) else { return [UInt8](repeating: 0, count: 16) }
        return bytes
    }()

    /// The record stored in `meta` of a log environment, if any.
    static func record(in txn: LMDBReadTransaction, meta: LMDBTable) throws -> Record? {
        guard let bytes = try txn.get(meta, key: metaKey) else { return nil }
        guard let record = Record(bytes) else { throw LogError.storage("malformed views record in meta") }
        return record
    }
}
