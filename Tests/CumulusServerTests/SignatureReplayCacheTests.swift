import Crypto
import Foundation
import Testing

@testable import CumulusServer

@Suite("Server-to-server replay cache")
struct SignatureReplayCacheTests {
    /// `r ‖ (n − s)`: the other signature that verifies for the same message.
    static func flipped(_ raw: [UInt8]) -> [UInt8] {
        var result = Array(raw[..<32])
        var borrow = 0
        var s = [UInt8](repeating: 0, count: 32)
        for index in stride(from: 31, through: 0, by: -1) {
            var digit = Int(SignatureReplayCache.order[index]) - Int(raw[32 + index]) - borrow
            borrow = digit < 0 ? 1 : 0
            if digit < 0 { digit += 256 }
            s[index] = UInt8(digit)
        }
        result += s
        return result
    }

    @Test("a signature is admitted once in its window, in either form of s; again after it expires; none past capacity")
    func admission() throws {
        let key = P256.Signing.PrivateKey()
        let message = Data("2026-11-26T08:00:00Z:hash:/database/1/c/development/public/records/modify".utf8)
        let raw = Array(try key.signature(for: message).rawRepresentation)
        let other = Self.flipped(raw)
        #expect(key.publicKey.isValidSignature(try P256.Signing.ECDSASignature(rawRepresentation: other), for: message),
            "n − s verifies too: the malleability the cache must see through")
        #expect(SignatureReplayCache.canonical(raw) == SignatureReplayCache.canonical(other))

        let now = Date()
        let cache = SignatureReplayCache(capacity: 2)
        #expect(cache.admit(raw, until: now + 600, now: now) == .fresh)
        #expect(cache.admit(raw, until: now + 600, now: now + 1) == .replayed)
        #expect(cache.admit(other, until: now + 600, now: now + 1) == .replayed)
        #expect(cache.admit(raw, until: now + 1_300, now: now + 700) == .fresh, "its window ended")

        let second = Array(try key.signature(for: message).rawRepresentation)
        let third = Array(try key.signature(for: message).rawRepresentation)
        #expect(cache.admit(second, until: now + 1_300, now: now + 700) == .fresh)
        #expect(cache.admit(third, until: now + 1_300, now: now + 700) == .full)
        #expect(cache.admit(third, until: now + 2_000, now: now + 1_400) == .fresh, "full until the others expire")
    }
}
