import CumulusModel

/// One reference a record holds, as the reference graph stores it: the target's
/// name (always in the record's own zone) and the action. A record's references
/// are a sorted set of these — several fields pointing at the same target with the
/// same action count once, which is how the 750-owner limit counts too.
public struct OutgoingReference: Sendable, Hashable, Comparable {
    /// The target record's name.
    public var targetName: String
    /// The reference's action.
    public var action: Reference.Action

    /// A reference edge.
    public init(targetName: String, action: Reference.Action) {
        self.targetName = targetName
        self.action = action
    }

    /// Target name bytes, then action.
    public static func < (lhs: OutgoingReference, rhs: OutgoingReference) -> Bool {
        if lhs.targetName != rhs.targetName { return UTF8Order.precedes(lhs.targetName, rhs.targetName) }
        return lhs.action.rawValue < rhs.action.rawValue
    }

    /// Every reference `record` holds in its zone — user fields (lists included) and
    /// `parent` — sorted and unique. References to other zones (which validation
    /// refuses) are ignored.
    public static func of(_ record: Record) -> [OutgoingReference] {
        // Collected into an array, sorted and compacted: a record holds a reference
        // or two, and hashing each into a set, then sorting through `UTF8View`, was
        // most of this in a 400-record operation's profile (it runs three times per
        // saved record: ordering, planning, the views).
        var edges: [OutgoingReference] = []
        let zone = record.recordID.zoneID
        record.forEachFieldReference { reference in
            guard reference.recordID.zoneID == zone else { return }
            edges.append(OutgoingReference(targetName: reference.recordID.recordName, action: reference.action))
        }
        if let parent = record.parent, parent.recordID.zoneID == zone {
            edges.append(OutgoingReference(targetName: parent.recordID.recordName, action: parent.action))
        }
        guard edges.count > 1 else { return edges }
        // Byte order and byte equality are `<` and `==` for ASCII names (as valid
        // names are); any other name is deduplicated Swift's way.
        guard edges.allSatisfy({ UTF8Order.isASCII($0.targetName) }) else { return Set(edges).sorted() }
        return UTF8Order.sorted(edges, uniqueBy: { a, b in
            let order = UTF8Order.compare(a.targetName, b.targetName)
            return order != 0 ? order : Int(a.action.rawValue) - Int(b.action.rawValue)
        })
    }
}
