import CumulusEngine
import CumulusViews

extension Container {
    /// Digests of every view table, read in one transaction: equal digests, equal views.
    public func viewDigests() throws -> [ViewDigest] {
        try store.environment.read { txn in
            try views.digests(in: txn)
        }
    }
}
