import CumulusModel

/// One commit as stored in the `log` table and shipped to followers (`Docs/LOG-FORMAT.md` §6).
///
/// ```
/// u8      format (1)
/// u8      flags (bit 0: payload is zstd-compressed; other bits 0)
/// varint  sequence
/// varint  dictionary ID (0: no dictionary)
/// varint  uncompressed length of the commit bytes
/// [32]    chain hash = SHA-256(previous frame's chain hash ‖ commit bytes)
/// ...     payload (a zstd frame, or the raw commit bytes)
/// u32     CRC-32C of every byte before it, big-endian
/// ```
/// `Docs/LOG-FORMAT.md` §6 is the full specification.
public struct Frame: Sendable, Hashable {
    /// The format byte this version writes and reads.
    public static let formatVersion: UInt8 = 1
    /// Flag: the payload is a zstd frame.
    public static let compressedFlag: UInt8 = 1
    /// Length of the chain hash.
    public static let hashLength = 32
    /// Largest commit a frame may hold: bounds what a hostile frame can make the
    /// reader allocate, and what the writer accepts (larger is `limitExceeded`), so
    /// every stored frame can be read back and sent to a follower. The largest
    /// operation allowed, 400 records of 1 MiB each (`Docs/DATA-MODEL.md`, "Limits"),
    /// fits with room to spare.
    public static let maxUncompressedLength = 512 << 20
    /// Largest stored frame: the largest commit (a frame whose compressed payload
    /// would not be smaller is stored raw) plus the header and checksum, whose
    /// varints take at most 63 bytes.
    public static let maxEncodedLength = maxUncompressedLength + 64

    /// The commit's global sequence.
    public var sequence: UInt64
    /// The dictionary the payload was compressed with; 0 for none.
    public var dictionaryID: UInt32
    /// Whether the payload is compressed.
    public var isCompressed: Bool
    /// Length of the commit bytes once decompressed.
    public var uncompressedLength: Int
    /// SHA-256(previous chain hash ‖ commit bytes).
    public var chainHash: [UInt8]
    /// The stored payload.
    public var payload: [UInt8]

    /// A frame from its parts.
    public init(
        sequence: UInt64, dictionaryID: UInt32, isCompressed: Bool, uncompressedLength: Int, chainHash: [UInt8],
        payload: [UInt8]
    ) {
        self.sequence = sequence
        self.dictionaryID = dictionaryID
        self.isCompressed = isCompressed
        self.uncompressedLength = uncompressedLength
        self.chainHash = chainHash
        self.payload = payload
    }

    /// The stored bytes of this frame.
    public func encoded() -> [UInt8] {
        var writer = BinaryWriter(capacity: payload.count + 56)
        writer.u8(Self.formatVersion)
        writer.u8(isCompressed ? Self.compressedFlag : 0)
        writer.varint(sequence)
        writer.varint(UInt64(dictionaryID))
        writer.length(uncompressedLength)
        writer.raw(chainHash)
        writer.raw(payload)
        let crc = writer.bytes.withUnsafeBytes { CRC32C.checksum($0) }
        writer.u32(crc)
        return writer.bytes
    }

    /// Parses stored bytes, checking the CRC first so no field of a damaged frame is
    /// trusted. `expectedSequence` (the LMDB key it was stored under) must match.
    public init(parsing buffer: UnsafeRawBufferPointer, expectedSequence: UInt64?) throws(LogError) {
        let view = try FrameView(parsing: buffer, expectedSequence: expectedSequence)
        self.init(
            sequence: view.sequence, dictionaryID: view.dictionaryID, isCompressed: view.isCompressed,
            uncompressedLength: view.uncompressedLength, chainHash: Array(view.chainHash), payload: Array(view.payload))
    }

    /// Parses a stored byte array.
    public init(parsing bytes: [UInt8], expectedSequence: UInt64?) throws(LogError) {
        do {
            self = try bytes.withUnsafeBytes { buffer in try Frame(parsing: buffer, expectedSequence: expectedSequence) }
        } catch let error as LogError {
            throw error
        } catch {
            throw .corruptFrame(sequence: expectedSequence ?? 0, reason: "\(error)")
        }
    }
}
