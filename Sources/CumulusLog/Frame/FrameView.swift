import CumulusModel

/// A stored ``Frame`` parsed in place: the header's fields, and the chain hash and
/// payload as views of the stored bytes, so a sequential read of the log copies
/// nothing before decompressing.
///
/// Lifetime: the views borrow the buffer parsed, and must not outlive it — for a
/// `log` table value, the LMDB transaction it was read in.
public struct FrameView {
    /// The commit's global sequence.
    public let sequence: UInt64
    /// The dictionary the payload was compressed with; 0 for none.
    public let dictionaryID: UInt32
    /// Whether the payload is compressed.
    public let isCompressed: Bool
    /// Length of the commit bytes once decompressed.
    public let uncompressedLength: Int
    /// SHA-256(previous chain hash ‖ commit bytes), in the stored bytes.
    public let chainHash: UnsafeRawBufferPointer
    /// The stored payload, in the stored bytes.
    public let payload: UnsafeRawBufferPointer

    /// Parses stored bytes, checking the CRC first so no field of a damaged frame is
    /// trusted. `expectedSequence` (the LMDB key it was stored under) must match.
    /// The layout is ``Frame``'s.
    public init(parsing buffer: UnsafeRawBufferPointer, expectedSequence: UInt64?) throws(LogError) {
        let label = expectedSequence ?? 0
        guard buffer.count >= 2 + 3 + Frame.hashLength + 4 else {
            throw .corruptFrame(sequence: label, reason: "only \(buffer.count) bytes")
        }
        let body = UnsafeRawBufferPointer(rebasing: buffer[0..<buffer.count - 4])
        var stored: UInt32 = 0
        for i in buffer.count - 4..<buffer.count { stored = stored << 8 | UInt32(buffer[i]) }
        guard CRC32C.checksum(body) == stored else {
            throw .corruptFrame(sequence: label, reason: "checksum mismatch")
        }
        do {
            var reader = BinaryReader(body, context: "frame")
            let format = try reader.u8()
            guard format == Frame.formatVersion else {
                throw reader.failure("unsupported frame format \(format)")
            }
            let flags = try reader.u8()
            guard flags & ~Frame.compressedFlag == 0 else { throw reader.failure("unknown flags \(flags)") }
            sequence = try reader.varint()
            if let expectedSequence, sequence != expectedSequence {
                throw reader.failure("holds sequence \(sequence)")
            }
            let dictionary = try reader.varint()
            guard dictionary <= UInt64(UInt32.max) else { throw reader.failure("dictionary ID out of range") }
            dictionaryID = UInt32(dictionary)
            isCompressed = flags & Frame.compressedFlag != 0
            let length = try reader.varint()
            guard length <= UInt64(Frame.maxUncompressedLength) else {
                throw reader.failure("claims \(length) uncompressed bytes")
            }
            uncompressedLength = Int(length)
            chainHash = try reader.rawSlice(Frame.hashLength)
            payload = try reader.rawSlice(reader.remaining)
            if !isCompressed && payload.count != uncompressedLength {
                throw reader.failure("raw payload is \(payload.count) bytes, header says \(uncompressedLength)")
            }
        } catch let error as CumulusError {
            throw .corruptFrame(sequence: label, reason: error.message)
        } catch {
            throw .corruptFrame(sequence: label, reason: "\(error)")
        }
    }
}
