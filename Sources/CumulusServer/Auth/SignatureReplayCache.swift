import Foundation
import Synchronization

/// The server-to-server signatures used within their validity window, so a captured
/// signed request cannot be sent again while its date is still accepted
/// (``ServerSignature/maxSkew``). A signature covers no header and, from clients that
/// sign the path alone, no query, so the date check alone let anyone who saw a request
/// repeat it for up to ten minutes.
///
/// Keyed by the signature's `r` and `s` with `s` in its low form: an ECDSA signature
/// stays valid with `s` replaced by `n − s`, and a replay in that form must be caught
/// too. Bounded: entries leave when their window ends, and when ``capacity`` unexpired
/// signatures are held, new signed requests are refused until some expire.
final class SignatureReplayCache: Sendable {
    /// Unexpired signatures held at most.
    let capacity: Int
    private let seen = Mutex<[[UInt8]: Date]>([:])

    /// A cache holding at most `capacity` unexpired signatures.
    init(capacity: Int = 100_000) {
        self.capacity = capacity
    }

    /// What ``admit(_:until:now:)`` decided.
    enum Admission: Equatable {
        /// Not seen before: now remembered.
        case fresh
        /// Seen before within its window.
        case replayed
        /// Too many unexpired signatures held to remember another.
        case full
    }

    /// Remembers the signature `rawSignature` (`r ‖ s`, 64 bytes) until `expiry`,
    /// unless it was already used.
    func admit(_ rawSignature: [UInt8], until expiry: Date, now: Date = Date()) -> Admission {
        let key = Self.canonical(rawSignature)
        return seen.withLock { seen in
            if let held = seen[key], held > now { return .replayed }
            if seen.count >= capacity {
                // Sweeping only when full keeps each admission O(1) amortized.
                seen = seen.filter { $0.value > now }
                if seen.count >= capacity { return .full }
            }
            seen[key] = expiry
            return .fresh
        }
    }

    /// The order of P-256's group, big-endian.
    static let order: [UInt8] = [
        0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
        0xBC, 0xE6, 0xFA, 0xAD, 0xA7, 0x17, 0x9E, 0x84, 0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51,
    ]

    /// `r ‖ s` with `s` replaced by `n − s` when that is smaller: the one form of the
    /// two signatures that verify for the same message and `r`.
    static func canonical(_ raw: [UInt8]) -> [UInt8] {
        guard raw.count == 64 else { return raw }
        let s = Array(raw[32...])
        var flipped = [UInt8](repeating: 0, count: 32)
        var borrow = 0
        for index in stride(from: 31, through: 0, by: -1) {
            var digit = Int(order[index]) - Int(s[index]) - borrow
            borrow = digit < 0 ? 1 : 0
            if digit < 0 { digit += 256 }
            flipped[index] = UInt8(digit)
        }
        return Array(raw[..<32]) + (flipped.lexicographicallyPrecedes(s) ? flipped : s)
    }
}
