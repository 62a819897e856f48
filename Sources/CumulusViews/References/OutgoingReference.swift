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
        if lhs.targetName != rhs.targetName { return lhs.targetName.utf8.lexicographicallyPrecedes(rhs.targetName.utf8) }
        return lhs.action.rawValue < rhs.action.rawValue
    }

    /// Every reference `record` holds in its zone — user fields (lists included) and
    /// `parent` — sorted and unique. References to other zones (which validation
    /// refuses) are ignored.
    public static func of(_ record: Record) -> [OutgoingReference] {
        var set = Set<OutgoingReference>()
        let zone = record.recordID.zoneID
        record.forEachFieldReference { reference in
            guard reference.recordID.zoneID == zone else { return }
            set.insert(OutgoingReference(targetName: reference.recordID.recordName, action: reference.action))
        }
        if let parent = record.parent, parent.recordID.zoneID == zone {
            set.insert(OutgoingReference(targetName: parent.recordID.recordName, action: parent.action))
        }
        return set.sorted()
    }
}
