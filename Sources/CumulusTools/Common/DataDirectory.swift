import CumulusLog
import CumulusModel
import CumulusStorage
import Foundation

/// Opening a data directory for the tools.
public enum DataDirectory {
    /// Opens the log of the existing data directory at `path`, read-only unless
    /// `readOnly` is `false`. Read-only opens work beside a running server (LMDB lets
    /// other processes read while it writes). A path without a Cumulus data directory
    /// is `invalidArguments`; nothing is created.
    public static func openLog(_ path: String, readOnly: Bool = true) throws -> LogStore {
        guard FileManager.default.fileExists(atPath: path + "/data.mdb") else {
            throw CumulusError(.invalidArguments, "no Cumulus data directory at \(path) (no data.mdb there)")
        }
        var options = LMDBEnvironment.Options()
        options.readOnly = readOnly
        return try LogStore(environment: LMDBEnvironment(path: path, options: options))
    }
}
