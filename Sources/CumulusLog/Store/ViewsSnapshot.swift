import CumulusModel
import CumulusStorage
import Foundation

/// Durable copies of the views environment, each at one applied commit: what a node
/// whose views a crash of the machine tore recovers from when retention has dropped
/// commits a rebuild from the first would need (``LogStore/open(path:options:)``).
///
/// A snapshot is `DATA/views-snapshots/<sequence, 20 digits>/data.mdb`, a compact
/// copy of the views (``LMDBEnvironment/copy(to:compact:)``: one committed state,
/// taken while the writer goes on), flushed with its directory before the log
/// environment records it (`meta` key `viewsSnapshot`: `u64` sequence ‖ chain hash of
/// the commit its views applied last). Only the recorded one counts; older ones are
/// removed once a newer one is recorded, and one a crash left half-made is never
/// recorded, so never used. Retention (`LogRetention`) takes one before it drops
/// commits past the last, and never drops a commit after it: recovery copies it in
/// place of the torn views and catches up from the log, which still holds every
/// commit after it.
public enum ViewsSnapshot {
    /// The `meta` key of the record of the last snapshot.
    public static let metaKey: [UInt8] = Array("viewsSnapshot".utf8)

    /// The directory holding a data directory's snapshots.
    public static func directory(ofData path: String) -> String {
        (path.hasSuffix("/") ? path : path + "/") + "views-snapshots"
    }

    /// The directory of the snapshot at `sequence`.
    static func path(ofData path: String, at sequence: UInt64) -> String {
        directory(ofData: path) + "/" + SequenceName.of(sequence)
    }

    /// The last snapshot recorded in `meta` of the log environment of the data
    /// directory at `path`: the views' applied head it holds, or `nil` if none was
    /// taken or its file is not there. A copy of the log environment (a follower's
    /// seed, a replay) carries the record without the file, which stays with the node
    /// that took it: such a directory has no snapshot until it takes its own.
    static func record(in txn: LMDBReadTransaction, meta: LMDBTable, ofData path: String) throws -> LogHead? {
        guard let bytes = try txn.get(meta, key: metaKey) else { return nil }
        guard bytes.count == 8 + Frame.hashLength, let sequence = BigEndian.decode(UInt64.self, from: bytes) else {
            throw LogError.storage("malformed viewsSnapshot record in meta")
        }
        guard FileManager.default.fileExists(atPath: Self.path(ofData: path, at: sequence) + "/data.mdb") else { return nil }
        return LogHead(sequence: sequence, hash: Array(bytes[8...]))
    }

    /// Puts the snapshot recorded as `head` (``record(in:meta:ofData:)``) in place of
    /// the views of the data directory at `path`, whose files must be gone: a copy,
    /// so the snapshot stays for the next recovery.
    static func restore(_ head: LogHead, intoData path: String) throws {
        let source = Self.path(ofData: path, at: head.sequence) + "/data.mdb"
        let target = (path.hasSuffix("/") ? path : path + "/") + "data.mdb"
        try FileManager.default.copyItem(atPath: source, toPath: target)
        try FileSync.file(target)
        try FileSync.directory(path)
    }
}

extension LogStore {
    /// The last views snapshot recorded (``ViewsSnapshot``), if any.
    public func viewsSnapshot() throws -> LogHead? {
        let meta = tables.meta
        let data = environment.path
        return try logEnvironment.read { try ViewsSnapshot.record(in: $0, meta: meta, ofData: data) }
    }

    /// Takes a views snapshot and records it (``ViewsSnapshot``); returns the applied
    /// head it holds. Runs beside the writer, which it does not stop; call it from
    /// one thread at a time, outside any transaction. Costs a compact copy of the
    /// views and two fsyncs.
    @discardableResult
    public func takeViewsSnapshot() throws -> LogHead {
        let data = environment.path
        let root = ViewsSnapshot.directory(ofData: data)
        let scratch = root + "/new"
        try? FileManager.default.removeItem(atPath: scratch)
        try environment.copy(to: scratch, compact: true)
        // What the copy holds is its own applied head, read from it (the writer may
        // have committed more since); the environment closes when the closure ends.
        let head = try {
            let copy = try LMDBEnvironment(path: scratch)
            let state = try DataLayout.open(.viewsState, in: copy)
            return try copy.read { try Self.readAppliedHead(state, in: $0) }
        }()
        try? FileManager.default.removeItem(atPath: scratch + "/lock.mdb")
        try FileSync.file(scratch + "/data.mdb")
        let final = ViewsSnapshot.path(ofData: data, at: head.sequence)
        if FileManager.default.fileExists(atPath: final) {
            // A snapshot of the same commit is whole already (only a finished copy is
            // renamed into place), and may be the recorded one: keep it, never a window
            // in which the record names a missing file.
            try FileManager.default.removeItem(atPath: scratch)
        } else {
            try FileManager.default.moveItem(atPath: scratch, toPath: final)
            try FileSync.directory(root)
        }
        let meta = tables.meta
        try logEnvironment.write { txn in
            try txn.put(meta, key: ViewsSnapshot.metaKey, value: BigEndian.bytes(head.sequence) + head.hash)
        }
        // Older snapshots are no longer what recovery uses.
        let kept = final.split(separator: "/").last.map(String.init)
        for name in (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [] where name != kept {
            try? FileManager.default.removeItem(atPath: root + "/" + name)
        }
        return head
    }
}
