import CumulusModel

/// The bytes current records hold, by who pays for them: the numbers the record
/// quotas are checked against (issue 40, `Docs/SECURITY.md`).
///
/// A record costs its stored bytes (``ViewTables/records``) and the bytes of the asset
/// files it holds, each file once per record. As in CloudKit, a private database's
/// records, including what participants save into its shared zones, are its owner's;
/// a public record is its creator's. Every record also counts toward its container,
/// both environments together (they share the disk).
///
/// A value type gathering one commit's changes, written by ``Views`` at the commit's
/// end: one read and one write per payer per commit, not per record (a cascade of
/// 100,000 deletions charges one user).
public struct RecordUsage: Sendable {
    /// Byte changes by `usage` key (``ViewKeys/usage(container:user:)``), each key
    /// once, in the order first charged. A list, not a dictionary: a commit charges
    /// its container and one payer or a few, and the dictionary every commit built and
    /// grew was most of what charging cost in a replay (3.1 % of its writer thread).
    private(set) var changes: [(key: HashedBytes, bytes: Int64)] = []
    /// Where each key is in `changes`, kept once the list is longer than
    /// ``searchedChanges`` (a public cascade over many creators).
    private var positions: [HashedBytes: Int] = [:]
    /// Changes searched one by one before `positions` is kept.
    static let searchedChanges = 8

    /// No changes yet.
    public init() {}

    /// Who pays for a record of `database` created by `creator`: the owner of a
    /// private database, the creator of a public record (`nil`: nobody but the
    /// container, for a public record without a creator).
    public static func payer(in database: DatabaseID, creator: String?) -> String? {
        database.scope == .public ? creator : database.owner
    }

    /// Adds `bytes` (negative: frees them) to the payer of a record of `database`
    /// created by `creator`, and to the container.
    mutating func charge(_ bytes: Int64, in database: DatabaseID, creator: String?) {
        guard bytes != 0 else { return }
        let payer = Self.payer(in: database, creator: creator).flatMap { $0.isEmpty ? nil : $0 }
        let keys = keys(container: database.container, payer: payer)
        add(bytes, to: keys.container)
        if let payerKey = keys.payer { add(bytes, to: payerKey) }
    }

    /// Adds `bytes` to the change of `key`.
    private mutating func add(_ bytes: Int64, to key: HashedBytes) {
        if let index = index(of: key) {
            changes[index].bytes += bytes
            return
        }
        changes.append((key, bytes))
        if changes.count == Self.searchedChanges + 1 {
            for (index, change) in changes.enumerated() { positions[change.key] = index }
        } else if changes.count > Self.searchedChanges {
            positions[key] = changes.count - 1
        }
    }

    /// Where `key` is in `changes`: searched one by one in a short list, else looked up.
    private func index(of key: HashedBytes) -> Int? {
        changes.count > Self.searchedChanges ? positions[key] : changes.firstIndex { $0.key == key }
    }

    /// The change charged to `key` so far, or `nil` if none was.
    func change(of key: HashedBytes) -> Int64? {
        index(of: key).map { changes[$0].bytes }
    }

    /// The keys of the last container and payer charged: a commit's records nearly
    /// always have one payer, so a cascade of 100,000 victims builds its two keys once,
    /// not for every victim.
    private var last: (container: String, payer: String?, keys: (container: HashedBytes, payer: HashedBytes?))?

    /// The `usage` keys of `container` and of `payer` in it.
    private mutating func keys(container: String, payer: String?) -> (container: HashedBytes, payer: HashedBytes?) {
        // Compared by bytes, as the keys are.
        func same(_ a: String?, _ b: String?) -> Bool {
            switch (a, b) {
            case (nil, nil): true
            case let (a?, b?): UTF8Order.compare(a, b) == 0
            default: false
            }
        }
        if let last, same(last.container, container), same(last.payer, payer) { return last.keys }
        let keys = (
            container: HashedBytes(ViewKeys.usage(container: container, user: nil)),
            payer: payer.map { HashedBytes(ViewKeys.usage(container: container, user: $0)) }
        )
        last = (container, payer, keys)
        return keys
    }
}
