import CCRC32C

/// CRC-32C (Castagnoli), the checksum that closes every log frame.
///
/// Chosen over zstd's own checksum because it covers the whole stored frame —
/// header and chain hash included — so any flipped byte is caught before
/// decompression. Every read of the log checks it, so it runs on the CPU's own
/// instruction where there is one (SSE4.2 on x86-64, the CRC extension on AArch64:
/// eight bytes per instruction), and on a slicing-by-8 table (about a byte per
/// cycle) otherwise. Both give the same value; the tests hold them to it.
public enum CRC32C {
    /// Whether ``checksum(_:)-(UnsafeRawBufferPointer)`` uses the CPU's instruction.
    public static let usesHardware = cumulus_crc32c_hardware_available() != 0

    /// Eight 256-entry tables, flat: table `t` starts at `t * 256`.
    static let table: [UInt32] = {
        var table = [UInt32](repeating: 0, count: 8 * 256)
        for i in 0..<256 {
            var crc = UInt32(i)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
            table[i] = crc
        }
        for t in 1..<8 {
            for i in 0..<256 {
                let previous = table[(t - 1) * 256 + i]
                table[t * 256 + i] = (previous >> 8) ^ table[Int(previous & 0xFF)]
            }
        }
        return table
    }()

    /// The CRC-32C of `bytes`.
    public static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard usesHardware, let base = bytes.baseAddress else { return tableChecksum(bytes) }
        return cumulus_crc32c_hardware(0xFFFF_FFFF, base, bytes.count) ^ 0xFFFF_FFFF
    }

    /// The CRC-32C of `bytes` from the table, whatever the CPU has: the fallback, and
    /// what the tests check the instruction's answer against.
    static func tableChecksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        table.withUnsafeBufferPointer { t in
            var crc: UInt32 = 0xFFFF_FFFF
            var index = 0
            let count = bytes.count
            while count - index >= 8 {
                let low = crc ^ (UInt32(bytes[index]) | UInt32(bytes[index + 1]) << 8
                    | UInt32(bytes[index + 2]) << 16 | UInt32(bytes[index + 3]) << 24)
                crc = t[7 * 256 + Int(low & 0xFF)] ^ t[6 * 256 + Int((low >> 8) & 0xFF)]
                    ^ t[5 * 256 + Int((low >> 16) & 0xFF)] ^ t[4 * 256 + Int(low >> 24)]
                    ^ t[3 * 256 + Int(bytes[index + 4])] ^ t[2 * 256 + Int(bytes[index + 5])]
                    ^ t[1 * 256 + Int(bytes[index + 6])] ^ t[Int(bytes[index + 7])]
                index += 8
            }
            while index < count {
                crc = (crc >> 8) ^ t[Int((crc ^ UInt32(bytes[index])) & 0xFF)]
                index += 1
            }
            return crc ^ 0xFFFF_FFFF
        }
    }

    /// The CRC-32C of a byte array.
    public static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0) }
    }
}
