import CLMDB
import Testing

@testable import CumulusStorage

@Suite("Storage errors")
struct StorageErrorTests {
    @Test func lmdbErrorsCarryLMDBsMessageAndNamedChecks() {
        let full = StorageError.lmdb(MDB_MAP_FULL, "mdb_put")
        #expect(full.isMapFull)
        #expect(full.description.contains("mdb_put"))
        #expect(full.description.contains("MDB_MAP_FULL"))
        #expect(StorageError.lmdb(MDB_NOTFOUND, "get").isNotFound)
        #expect(StorageError.lmdb(MDB_KEYEXIST, "put").isKeyExists)
        #expect(StorageError.lmdb(MDB_READERS_FULL, "begin").isReadersFull)
        #expect(StorageError.lmdb(MDB_MAP_RESIZED, "begin").isMapResized)
        #expect(StorageError.lmdb(MDB_DBS_FULL, "open").isTablesFull)
        #expect(StorageError.lmdb(MDB_BAD_TXN, "put").isBadTransaction)
        #expect(StorageError.lmdb(MDB_CORRUPTED, "get").isCorruption)
        #expect(StorageError.lmdb(28, "commit").isDiskFull)
        #expect(StorageError.lmdb(13, "open").isPermissionDenied)
        #expect(StorageError.lmdb(2, "open").description.contains("No such file"))
        #expect(!StorageError.emptyKey.isMapFull)
    }
}
