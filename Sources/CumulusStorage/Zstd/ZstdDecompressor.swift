import CZstd
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Decompresses single zstd frames written by `ZstdCompressor`, treating input as hostile.
///
/// Every frame must be exactly one standard zstd frame that records its content size; that
/// size is checked against the caller's limit *before* any output is allocated, so a
/// forged header cannot make it allocate gigabytes. zstd also caps the window it will use
/// (128 MiB by default). Checksums present in the frame are verified. Malformed,
/// truncated or tampered input throws; it never traps or returns partial data.
///
/// **Threads.** One `ZSTD_DCtx` is created in `init` and reused; calls are serialized by an
/// internal mutex, so the decompressor is `Sendable` and may be shared.
public final class ZstdDecompressor: Sendable {
    /// The largest reused output buffer ``withDecompressed(_:dictionary:maxOutputSize:_:)``
    /// keeps between calls (4 MiB: far above a typical commit, far below the 512 MiB a
    /// frame may declare).
    public static let retainedScratchLimit = 4 << 20

    /// The dictionaries available to frames, by ID.
    public let dictionaries: [UInt32: ZstdDictionary]

    private let context: Mutex<DecompressionContext>

    /// - Parameter dictionaries: every dictionary frames may need; a frame naming an ID not
    ///   in this list fails with `.unknownDictionary`.
    /// - Throws: `.invalidArgument` if two dictionaries share an ID.
    public init(dictionaries: [ZstdDictionary] = []) throws(StorageError) {
        var byID: [UInt32: ZstdDictionary] = [:]
        for dictionary in dictionaries {
            guard byID.updateValue(dictionary, forKey: dictionary.id) == nil else {
                throw .invalidArgument("two dictionaries with ID \(dictionary.id)")
            }
        }
        guard let dctx = ZSTD_createDCtx() else {
            throw .zstd(code: 0, operation: "ZSTD_createDCtx", message: "out of memory")
        }
        self.dictionaries = byID
        self.context = Mutex(
            DecompressionContext(pointer: dctx, scratch: .allocate(byteCount: 4_096, alignment: 16)))
    }

    deinit {
        context.withLock {
            _ = ZSTD_freeDCtx($0.pointer)
            $0.scratch.deallocate()
        }
    }

    /// Decompresses one frame, refusing to produce more than `maxOutputSize` bytes.
    ///
    /// - Parameter dictionary: the dictionary to use, for frames written without their
    ///   dictionary ID (`ZstdCompressor(includeDictionaryID: false)`). If `nil`, a frame
    ///   naming a dictionary ID gets the registered dictionary with that ID. If given and
    ///   the frame names a different ID, that is an error. A wrong dictionary for a frame
    ///   without an ID is caught by zstd's checks and the frame checksum.
    /// - Throws: `.sizeLimitExceeded` if the frame declares more than `maxOutputSize`;
    ///   `.unknownDictionary` if it names a dictionary that is neither given nor
    ///   registered; `.corrupt` for anything that is not exactly one well-formed frame with
    ///   a recorded size; `.zstd` for failures inside zstd (checksum mismatch, damaged
    ///   blocks, wrong or missing dictionary).
    public func decompress(
        _ frame: some ContiguousBytes, dictionary: ZstdDictionary? = nil, maxOutputSize: Int
    ) throws(StorageError) -> [UInt8] {
        guard maxOutputSize >= 0 else { throw .invalidArgument("negative maxOutputSize") }
        let outcome: Result<[UInt8], StorageError> = frame.withUnsafeBytes { source in
            Result { () throws(StorageError) in try decompress(source, dictionary: dictionary, maxOutputSize: maxOutputSize) }
        }
        return try outcome.get()
    }

    /// Decompresses one frame into the decompressor's own reused buffer and calls
    /// `body` with the result, valid only during the call: for a reader that decodes
    /// the bytes at once (the log's commits) and need not allocate per frame.
    /// The checks and errors are ``decompress(_:dictionary:maxOutputSize:)``'s; `body`'s
    /// errors pass through.
    ///
    /// `body` runs while the decompressor is held: it must not use this decompressor
    /// (that would deadlock). The buffer grows to the frames seen, up to
    /// ``retainedScratchLimit``; a larger frame gets a buffer of its own, freed after
    /// the call, so one huge commit does not pin its size for the life of the process.
    public func withDecompressed<Value>(
        _ source: UnsafeRawBufferPointer, dictionary: ZstdDictionary? = nil, maxOutputSize: Int,
        _ body: (UnsafeRawBufferPointer) throws -> Value
    ) throws -> Value {
        guard maxOutputSize >= 0 else { throw StorageError.invalidArgument("negative maxOutputSize") }
        let (size, dictionary) = try check(source, dictionary: dictionary, maxOutputSize: maxOutputSize)
        if size > Self.retainedScratchLimit {
            let once = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 16)
            defer { once.deallocate() }
            guard let output = once.baseAddress else { throw StorageError.invalidArgument("no output buffer") }
            let written = try context.withLock { context in
                try Self.run(context.pointer, into: output, size, source, dictionary)
            }
            return try body(UnsafeRawBufferPointer(rebasing: once[..<written]))
        }
        return try context.withLock { context in
            if context.scratch.count < max(size, 1) {
                context.scratch.deallocate()
                context.scratch = .allocate(
                    byteCount: min(max(size, 1, context.scratch.count * 2), Self.retainedScratchLimit), alignment: 16)
            }
            guard let output = context.scratch.baseAddress else { throw StorageError.invalidArgument("no output buffer") }
            let written = try Self.run(context.pointer, into: output, size, source, dictionary)
            return try body(UnsafeRawBufferPointer(rebasing: context.scratch[..<written]))
        }
    }

    private func decompress(
        _ source: UnsafeRawBufferPointer, dictionary given: ZstdDictionary?, maxOutputSize: Int
    ) throws(StorageError) -> [UInt8] {
        let (size, dictionary) = try check(source, dictionary: given, maxOutputSize: maxOutputSize)
        return try context.withLock { context throws(StorageError) -> [UInt8] in
            var failure: StorageError?
            // Capacity is exactly the declared size: a frame that lies about it fails with
            // dstSize_tooSmall instead of writing past what the caller allowed.
            let output = [UInt8](unsafeUninitializedCapacity: max(size, 1)) { buffer, count in
                do throws(StorageError) {
                    guard let base = buffer.baseAddress else { throw StorageError.invalidArgument("no output buffer") }
                    count = try Self.run(context.pointer, into: UnsafeMutableRawPointer(base), size, source, dictionary)
                } catch {
                    failure = error
                    count = 0
                }
            }
            if let failure { throw failure }
            return output
        }
    }

    /// The declared content size and the dictionary to use, after every check that
    /// needs no output: one standard frame, exactly, with a recorded size within the
    /// limit and a dictionary that is given or registered.
    private func check(
        _ source: UnsafeRawBufferPointer, dictionary given: ZstdDictionary?, maxOutputSize: Int
    ) throws(StorageError) -> (size: Int, dictionary: ZstdDictionary?) {
        // Only standard frames: a skippable frame would "decompress" to nothing.
        guard source.count >= 4,
            source.loadUnaligned(as: UInt32.self).littleEndian == UInt32(ZSTD_MAGICNUMBER)
        else {
            throw .corrupt("not a zstd frame (\(source.count) bytes, bad magic number)")
        }
        let frameSize = ZSTD_findFrameCompressedSize(source.baseAddress, source.count)
        guard ZSTD_isError(frameSize) == 0 else { throw .zstd(frameSize, "ZSTD_findFrameCompressedSize") }
        guard frameSize == source.count else {
            throw .corrupt("\(source.count - frameSize) bytes after the zstd frame")
        }
        let declared = ZSTD_getFrameContentSize(source.baseAddress, source.count)
        // ZSTD_CONTENTSIZE_UNKNOWN and ZSTD_CONTENTSIZE_ERROR are (0ULL - 1) and (0ULL - 2).
        guard declared != UInt64.max else { throw .corrupt("zstd frame does not record its content size") }
        guard declared != UInt64.max - 1 else { throw .corrupt("unreadable zstd frame header") }
        guard declared <= UInt64(maxOutputSize) else {
            throw .sizeLimitExceeded(size: declared, limit: maxOutputSize)
        }

        let dictionaryID = ZSTD_getDictID_fromFrame(source.baseAddress, source.count)
        var dictionary = given
        if dictionaryID != 0 {
            if let given {
                guard given.id == dictionaryID else { throw .unknownDictionary(id: dictionaryID) }
            } else {
                guard let found = dictionaries[dictionaryID] else { throw .unknownDictionary(id: dictionaryID) }
                dictionary = found
            }
        }
        return (Int(declared), dictionary)
    }

    /// Runs zstd into `output`, which has room for exactly `size` bytes (at least one),
    /// and returns how many it wrote: always `size`, or it throws.
    private static func run(
        _ dctx: OpaquePointer, into output: UnsafeMutableRawPointer, _ size: Int, _ source: UnsafeRawBufferPointer,
        _ dictionary: ZstdDictionary?
    ) throws(StorageError) -> Int {
        let result: Int
        if let dictionary {
            result = ZSTD_decompress_usingDDict(dctx, output, size, source.baseAddress, source.count, dictionary.ddict)
        } else {
            result = ZSTD_decompressDCtx(dctx, output, size, source.baseAddress, source.count)
        }
        guard ZSTD_isError(result) == 0 else { throw .zstd(result, "ZSTD_decompress") }
        guard result == size else { throw .corrupt("zstd frame declared \(size) bytes but produced \(result)") }
        return result
    }

    /// The content size a frame declares, without decompressing; `nil` if the frame does
    /// not record it or its header is unreadable.
    public static func declaredContentSize(of frame: some ContiguousBytes) -> UInt64? {
        let size = frame.withUnsafeBytes { ZSTD_getFrameContentSize($0.baseAddress, $0.count) }
        return size >= UInt64.max - 1 ? nil : size
    }

    /// The dictionary ID a frame names, or 0 if it names none (or the header is unreadable).
    public static func dictionaryID(of frame: some ContiguousBytes) -> UInt32 {
        frame.withUnsafeBytes { ZSTD_getDictID_fromFrame($0.baseAddress, $0.count) }
    }
}

/// Owns a `ZSTD_DCtx*` and the reused output buffer inside the decompressor's mutex.
// @unchecked Sendable: both are only touched while the mutex is held.
private struct DecompressionContext: @unchecked Sendable {
    let pointer: OpaquePointer
    var scratch: UnsafeMutableRawBufferPointer
}
