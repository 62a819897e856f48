import Foundation
import Testing
@testable import CumulusModel

@Suite("Random UUIDs")
struct UUIDRandomTests {
    @Test("each is a version-4 RFC 9562 UUID in the canonical text form, and 10,000 are all different")
    func versionVariantAndUniqueness() throws {
        var seen = Set<UUID>()
        for _ in 0..<10_000 {
            let uuid = UUID.random()
            let bytes = withUnsafeBytes(of: uuid.uuid) { Array($0) }
            #expect(bytes[6] >> 4 == 4)
            #expect(bytes[8] >> 6 == 0b10)
            let text = uuid.uuidString
            #expect(text.count == 36)
            #expect(UUID(uuidString: text) == uuid)
            #expect(Array(text)[14] == "4")
            seen.insert(uuid)
        }
        #expect(seen.count == 10_000)
    }

    @Test("the bits outside version and variant vary: each of the 122 random bits is seen both set and clear")
    func everyRandomBitVaries() {
        var ones = [UInt8](repeating: 0, count: 16)
        var zeros = [UInt8](repeating: 0, count: 16)
        for _ in 0..<512 {
            let bytes = withUnsafeBytes(of: UUID.random().uuid) { Array($0) }
            for index in 0..<16 {
                ones[index] |= bytes[index]
                zeros[index] |= ~bytes[index]
            }
        }
        for index in 0..<16 {
            let fixed: UInt8 = index == 6 ? 0xF0 : index == 8 ? 0xC0 : 0
            #expect(ones[index] | fixed == 0xFF, "byte \(index) has bits never set")
            #expect(zeros[index] | fixed == 0xFF, "byte \(index) has bits never clear")
        }
    }
}
