import CumulusModel
import CumulusStorage
import Foundation

/// The record of operators acting as users in the console (issue 45): who, as whom, when.
/// Kept in the `auth` table beside the credentials it concerns, on the node that served
/// the console; operators read it on the console's "Acting" list.
extension AuthStore {
    /// `auth` key prefix of one act-as: `x` ‖ u64 milliseconds since 1970 ‖ operator ‖
    /// 0 ‖ user → empty. Keys sort by time, so the newest are read from the end and the
    /// oldest pruned from the start.
    static let actAsPrefix: UInt8 = 0x78

    /// Most act-as records kept: the oldest go first, so the table cannot grow without
    /// bound however often operators switch.
    public static let actAsRecordsKept = 10_000

    /// One operator acting as one user, from `at`.
    public struct ActAs: Sendable, Equatable {
        /// The operator.
        public var `operator`: String
        /// The user acted as.
        public var user: String
        /// When it started.
        public var at: Date
    }

    /// Records that `operator` began acting as `user` now (or `at`), keeping the newest
    /// `keeping` records.
    public func recordActAs(
        operator: String, user: String, at: Date = Date(), keeping: Int = AuthStore.actAsRecordsKept
    ) throws {
        let milliseconds = UInt64(max(0, (at.timeIntervalSince1970 * 1000).rounded(.down)))
        let key = [Self.actAsPrefix] + BigEndian.bytes(milliseconds) + Array(`operator`.utf8) + [0] + Array(user.utf8)
        try environment.write { txn in
            try txn.put(table, key: key, value: [])
            // Past the limit, the oldest go: counted from the newest end.
            var seen = 0
            var pruned: [[UInt8]] = []
            try txn.scan(table, from: [Self.actAsPrefix], to: [Self.actAsPrefix + 1], reverse: true) { key, _ in
                seen += 1
                if seen > keeping { pruned.append(Array(key)) }
                return true
            }
            for key in pruned { _ = try txn.delete(table, key: key) }
        }
    }

    /// The newest `limit` act-as records, newest first.
    public func actAsRecords(limit: Int = 200) throws -> [ActAs] {
        var records: [ActAs] = []
        try environment.read { txn in
            try txn.scan(table, from: [Self.actAsPrefix], to: [Self.actAsPrefix + 1], reverse: true) { key, _ in
                if let record = Self.actAs(key: key) { records.append(record) }
                return records.count < limit
            }
        }
        return records
    }

    /// An act-as record from its key; `nil` for a key of another shape.
    private static func actAs(key: UnsafeRawBufferPointer) -> ActAs? {
        guard let milliseconds = BigEndian.decode(UInt64.self, from: key, at: 1) else { return nil }
        let rest = key[9...]
        guard let separator = rest.firstIndex(of: 0) else { return nil }
        return ActAs(
            operator: String(decoding: UnsafeRawBufferPointer(rebasing: rest[..<separator]), as: UTF8.self),
            user: String(decoding: UnsafeRawBufferPointer(rebasing: key[(separator + 1)...]), as: UTF8.self),
            at: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }
}
