import CumulusModel
import Testing

@testable import CumulusViews

/// ``RecordUsage/charge(_:in:creator:)`` on its own: the keys it remembers from the
/// last charge never send bytes to the wrong payer or container.
@Suite("RecordUsage charges")
struct RecordUsageChargeTests {
    static func database(_ container: String, _ scope: DatabaseScope, owner: String = "") -> DatabaseID {
        DatabaseID(container: container, environment: .development, scope: scope, owner: owner)
    }

    static func change(_ usage: RecordUsage, container: String, user: String?) -> Int64? {
        usage.change(of: HashedBytes(ViewKeys.usage(container: container, user: user)))
    }

    @Test("alternating payers and containers each get their own bytes")
    func alternating() {
        var usage = RecordUsage()
        let publicA = Self.database("iCloud.a", .public)
        let publicB = Self.database("iCloud.b", .public)
        for round in 0..<3 {
            usage.charge(10, in: publicA, creator: "alice")
            usage.charge(20, in: publicA, creator: "bob")
            usage.charge(5, in: publicB, creator: "alice")
            usage.charge(1, in: publicA, creator: nil)
            usage.charge(-2, in: publicA, creator: "alice")
            #expect(Self.change(usage, container: "iCloud.a", user: "alice") == Int64(8 * (round + 1)))
        }
        #expect(Self.change(usage, container: "iCloud.a", user: "bob") == 60)
        #expect(Self.change(usage, container: "iCloud.b", user: "alice") == 15)
        let containerA: Int64 = 3 * (10 + 20 + 1 - 2)
        #expect(Self.change(usage, container: "iCloud.a", user: nil) == containerA)
        #expect(Self.change(usage, container: "iCloud.b", user: nil) == 15)
        #expect(usage.changes.count == 5)
    }

    @Test("more payers than are searched one by one: each still gets its own bytes, once in the list")
    func manyPayers() {
        var usage = RecordUsage()
        let database = Self.database("iCloud.a", .public)
        let creators = (0..<(3 * RecordUsage.searchedChanges)).map { "creator-\($0)" }
        for round in 1...3 {
            for (index, creator) in creators.enumerated() { usage.charge(Int64(index + 1), in: database, creator: creator) }
            for (index, creator) in creators.enumerated() {
                #expect(Self.change(usage, container: "iCloud.a", user: creator) == Int64(round * (index + 1)))
            }
        }
        #expect(usage.changes.count == creators.count + 1)
        #expect(Set(usage.changes.map(\.key)).count == usage.changes.count)
        let perRound = Int64(creators.count * (creators.count + 1) / 2)
        #expect(Self.change(usage, container: "iCloud.a", user: nil) == 3 * perRound)
    }

    @Test("a private database's records are its owner's whoever created them; an empty creator charges the container alone")
    func privateOwner() {
        var usage = RecordUsage()
        usage.charge(7, in: Self.database("iCloud.a", .private, owner: "carol"), creator: "dave")
        usage.charge(3, in: Self.database("iCloud.a", .public), creator: "")
        #expect(Self.change(usage, container: "iCloud.a", user: "carol") == 7)
        #expect(Self.change(usage, container: "iCloud.a", user: "dave") == nil)
        #expect(Self.change(usage, container: "iCloud.a", user: nil) == 10)
    }

    @Test("payers told apart by bytes: canonically equivalent names are different payers, as their keys are")
    func bytesNotEquivalence() {
        var usage = RecordUsage()
        let database = Self.database("iCloud.a", .public)
        let composed = "caf\u{E9}"
        let decomposed = "cafe\u{301}"
        #expect(composed == decomposed)
        usage.charge(4, in: database, creator: composed)
        usage.charge(6, in: database, creator: decomposed)
        #expect(Self.change(usage, container: "iCloud.a", user: composed) == 4)
        #expect(Self.change(usage, container: "iCloud.a", user: decomposed) == 6)
    }
}
