import CZstd

/// A trained zstd dictionary, digested once for compression and once for decompression.
///
/// Small records compress poorly on their own because each frame starts with no history;
/// a dictionary trained on typical records supplies that history. Frames record the
/// dictionary's `id`, so the decompressor can pick the right one and refuse a wrong one.
///
/// **Lifetime and threads.** Immutable; share it freely between threads and between any
/// number of `ZstdCompressor`s and `ZstdDecompressor`s, which keep it alive. The prepared
/// `ZSTD_CDict`/`ZSTD_DDict` are freed when the last reference goes away.
public final class ZstdDictionary: @unchecked Sendable {
    // @unchecked Sendable: CDict and DDict are never modified after creation, and zstd
    // documents them as read-only during use, so concurrent use by several contexts is safe.

    /// The dictionary ID stored in the dictionary and in every frame compressed with it.
    /// Never 0 (0 means "no dictionary" in a frame header, so such dictionaries are refused).
    public let id: UInt32
    /// The dictionary in zstd's format; persist these bytes and reload with `init(bytes:)`.
    public let bytes: [UInt8]
    /// The compression level baked into the prepared `ZSTD_CDict`. A `ZstdCompressor`
    /// using this dictionary compresses at this level.
    public let compressionLevel: Int32

    let cdict: OpaquePointer
    let ddict: OpaquePointer

    /// Loads a dictionary produced by `train` (or `zstd --train`).
    ///
    /// - Throws: `.invalidArgument` if `bytes` is not a zstd-format dictionary (no magic
    ///   number or ID 0 — raw-content dictionaries are not accepted) or the level is out of
    ///   range; `.corrupt` if zstd cannot digest it.
    public init(bytes: [UInt8], compressionLevel: Int32 = ZstdCompressor.defaultLevel) throws(StorageError) {
        try ZstdCompressor.validate(level: compressionLevel)
        let id = bytes.withUnsafeBytes { ZDICT_getDictID($0.baseAddress, $0.count) }
        guard id != 0 else {
            throw .invalidArgument("not a zstd dictionary (missing magic number or dictionary ID 0)")
        }
        // Create both digests before setting any stored property, so a failure frees what
        // was made here and deinit never runs on a half-built object.
        let cdict = bytes.withUnsafeBytes { ZSTD_createCDict($0.baseAddress, $0.count, compressionLevel) }
        guard let cdict else { throw .corrupt("zstd could not load dictionary \(id) for compression") }
        let ddict = bytes.withUnsafeBytes { ZSTD_createDDict($0.baseAddress, $0.count) }
        guard let ddict else {
            ZSTD_freeCDict(cdict)
            throw .corrupt("zstd could not load dictionary \(id) for decompression")
        }
        self.id = id
        self.bytes = bytes
        self.compressionLevel = compressionLevel
        self.cdict = cdict
        self.ddict = ddict
    }

    deinit {
        ZSTD_freeCDict(cdict)
        ZSTD_freeDDict(ddict)
    }

    /// Trains a dictionary of at most `capacity` bytes from example records
    /// (`ZDICT_trainFromBuffer`).
    ///
    /// Give it many representative samples — hundreds to thousands, ideally ~100× the
    /// dictionary size in total. A few KiB to ~100 KiB is a typical capacity.
    ///
    /// - Throws: `.invalidArgument` for fewer than 8 non-empty samples or a capacity below
    ///   256 bytes; `.zstd` if training fails (usually: too little or too uniform data —
    ///   add samples or shrink `capacity`).
    public static func train(
        samples: [[UInt8]], capacity: Int = 16 * 1024, compressionLevel: Int32 = ZstdCompressor.defaultLevel
    ) throws(StorageError) -> ZstdDictionary {
        guard capacity >= 256 else {
            throw .invalidArgument("dictionary capacity must be at least 256 bytes, got \(capacity)")
        }
        let usable = samples.filter { !$0.isEmpty }
        guard usable.count >= 8 else {
            throw .invalidArgument(
                "dictionary training needs at least 8 non-empty samples (hundreds are better), got \(usable.count)")
        }
        let sizes = usable.map(\.count)
        let joined = Array(usable.joined())
        var result = 0
        let dictionary = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in
            result = joined.withUnsafeBytes { samplesBuffer in
                sizes.withUnsafeBufferPointer { sizesBuffer in
                    ZDICT_trainFromBuffer(
                        buffer.baseAddress, capacity, samplesBuffer.baseAddress, sizesBuffer.baseAddress,
                        UInt32(sizesBuffer.count))
                }
            }
            count = ZDICT_isError(result) != 0 ? 0 : result
        }
        guard ZDICT_isError(result) == 0 else {
            let error = StorageError.zstd(result, "ZDICT_trainFromBuffer")
            guard case let .zstd(code, operation, message) = error else { throw error }
            throw .zstd(
                code: code, operation: operation,
                message: "\(message) (\(usable.count) samples, \(joined.count) bytes: add more samples or lower the capacity)")
        }
        return try ZstdDictionary(bytes: dictionary, compressionLevel: compressionLevel)
    }
}
