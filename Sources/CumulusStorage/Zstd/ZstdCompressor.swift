import CZstd
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Compresses byte strings into single, self-describing zstd frames.
///
/// Every frame records its decompressed size and carries an xxhash64 checksum
/// (`ZSTD_c_checksumFlag`), so `ZstdDecompressor` can bound its allocation before
/// decompressing and detects corruption instead of returning garbage.
///
/// **Threads.** One `ZSTD_CCtx` is created in `init` and reused by every call (creating
/// one costs far more than compressing a small record). A `ZSTD_CCtx` is not thread-safe,
/// so calls are serialized by an internal mutex: the compressor is `Sendable` and may be
/// shared, but calls from many threads at once take turns — give each busy thread its own
/// compressor if that matters.
public final class ZstdCompressor: Sendable {
    /// zstd's own default (`ZSTD_CLEVEL_DEFAULT`): a good speed/ratio balance.
    public static let defaultLevel: Int32 = 3

    /// The compression level in use.
    public let level: Int32
    /// The dictionary every frame is compressed with, if any.
    public let dictionary: ZstdDictionary?
    /// Whether frames record the dictionary's ID (see `init`).
    public let includesDictionaryID: Bool

    private let context: Mutex<CompressionContext>

    /// A compressor, optionally with a dictionary.
    ///
    /// - Parameters:
    ///   - level: compression level; `nil` means the dictionary's `compressionLevel`, or
    ///     `defaultLevel` without one. At the dictionary's own level its prepared
    ///     `ZSTD_CDict` is shared; at another level the dictionary is digested once more,
    ///     privately for this compressor.
    ///   - dictionary: every frame is compressed with it; such frames decompress only with
    ///     the same dictionary.
    ///   - includeDictionaryID: write the dictionary's ID into each frame (4 bytes) so the
    ///     decompressor can pick the dictionary itself. Pass `false` only if the caller
    ///     records which dictionary a frame used and passes it to `decompress` explicitly;
    ///     a wrong dictionary is then still caught by the frame checksum.
    /// - Throws: `.invalidArgument` if `level` is outside `ZSTD_minCLevel()...ZSTD_maxCLevel()`.
    public init(
        level: Int32? = nil, dictionary: ZstdDictionary? = nil, includeDictionaryID: Bool = true
    ) throws(StorageError) {
        let level = level ?? dictionary?.compressionLevel ?? Self.defaultLevel
        try Self.validate(level: level)
        guard let cctx = ZSTD_createCCtx() else { throw .zstd(code: 0, operation: "ZSTD_createCCtx", message: "out of memory") }
        do throws(StorageError) {
            try Self.set(cctx, ZSTD_c_compressionLevel, level)
            try Self.set(cctx, ZSTD_c_checksumFlag, 1)
            try Self.set(cctx, ZSTD_c_contentSizeFlag, 1)
            try Self.set(cctx, ZSTD_c_dictIDFlag, includeDictionaryID ? 1 : 0)
            if let dictionary, dictionary.compressionLevel == level {
                // refCDict + ZSTD_compress2 (not ZSTD_compress_usingCDict) so the frame
                // parameters above, notably the checksum, still apply. The CDict is only
                // referenced: `self.dictionary` keeps it alive as long as the context.
                let rc = ZSTD_CCtx_refCDict(cctx, dictionary.cdict)
                if ZSTD_isError(rc) != 0 { throw .zstd(rc, "ZSTD_CCtx_refCDict") }
            } else if let dictionary {
                // A CDict's level overrides the context's, so for another level load the
                // bytes instead: zstd digests them at this level on first use and keeps
                // the digest for every later frame.
                let rc = dictionary.bytes.withUnsafeBytes { ZSTD_CCtx_loadDictionary(cctx, $0.baseAddress, $0.count) }
                if ZSTD_isError(rc) != 0 { throw .zstd(rc, "ZSTD_CCtx_loadDictionary") }
            }
        } catch {
            ZSTD_freeCCtx(cctx)
            throw error
        }
        self.level = level
        self.dictionary = dictionary
        self.includesDictionaryID = includeDictionaryID
        self.context = Mutex(CompressionContext(pointer: cctx))
    }

    deinit {
        context.withLock { _ = ZSTD_freeCCtx($0.pointer) }
    }

    /// Compresses `input` into one zstd frame.
    /// - Throws: `.zstd` if zstd fails (in practice only for inputs beyond zstd's limits
    ///   or when memory runs out).
    public func compress(_ input: some ContiguousBytes) throws(StorageError) -> [UInt8] {
        let outcome: Result<[UInt8], StorageError> = input.withUnsafeBytes { source in
            let bound = ZSTD_compressBound(source.count)
            guard ZSTD_isError(bound) == 0 else { return .failure(.zstd(bound, "ZSTD_compressBound")) }
            return context.withLock { context in
                var result = 0
                let output = [UInt8](unsafeUninitializedCapacity: bound) { buffer, count in
                    result = ZSTD_compress2(context.pointer, buffer.baseAddress, buffer.count, source.baseAddress, source.count)
                    count = ZSTD_isError(result) != 0 ? 0 : result
                }
                guard ZSTD_isError(result) == 0 else { return .failure(.zstd(result, "ZSTD_compress2")) }
                return .success(output)
            }
        }
        return try outcome.get()
    }

    static func validate(level: Int32) throws(StorageError) {
        guard (ZSTD_minCLevel()...ZSTD_maxCLevel()).contains(level) else {
            throw .invalidArgument("zstd level \(level) outside \(ZSTD_minCLevel())...\(ZSTD_maxCLevel())")
        }
    }

    private static func set(_ cctx: OpaquePointer, _ parameter: ZSTD_cParameter, _ value: Int32) throws(StorageError) {
        let rc = ZSTD_CCtx_setParameter(cctx, parameter, value)
        if ZSTD_isError(rc) != 0 { throw .zstd(rc, "ZSTD_CCtx_setParameter(\(parameter.rawValue))") }
    }
}

/// Owns a `ZSTD_CCtx*` inside the compressor's mutex.
// @unchecked Sendable: the pointer is only dereferenced (by zstd) while the mutex is held,
// so it never sees two threads at once; marking it lets the compiler mix it with the
// caller's (non-Sendable) input inside `withLock`.
private struct CompressionContext: @unchecked Sendable {
    let pointer: OpaquePointer
}
