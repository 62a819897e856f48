import CumulusLog
import CumulusStorage
import Foundation

/// What a crash of the machine leaves in a data directory whose node wrote after its
/// last views sync, made by hand for tests and benchmarks (``ViewsDurability``).
public enum MachineCrash {
    /// Records, in the log environment of the closed data directory at `path`, the
    /// views sync of another boot, not closed cleanly, covering `synced` (before the
    /// log's head); then overwrites the views' data file with 64 KiB that LMDB would
    /// misread, and returns those bytes.
    @discardableResult
    public static func simulate(dataDirectory path: String, synced: UInt64) throws -> Data {
        do {
            let log = try LMDBEnvironment(path: DataLayout.logPath(path))
            let meta = try DataLayout.open(.meta, in: log)
            let record = ViewsDurability.Record(boot: [UInt8](repeating: 0xEE, count: 16), clean: false, synced: synced)
            try log.write { try $0.put(meta, key: ViewsDurability.metaKey, value: record.bytes) }
        }
        var random = SystemRandomNumberGenerator()
        let torn = Data((0..<(64 << 10)).map { _ in UInt8.random(in: 0...255, using: &random) })
        try torn.write(to: URL(fileURLWithPath: path + "/data.mdb"))
        return torn
    }
}
