/// A field value pointing at another record in the same zone (`Docs/DATA-MODEL.md`, "References").
public struct Reference: Sendable, Hashable, Codable, CustomStringConvertible {
    /// What happens to the referring record when its target goes (the wire's
    /// `NONE`, `DELETE_SELF`, `VALIDATE`).
    public enum Action: UInt8, Sendable, Hashable, CaseIterable, Codable {
        /// Nothing: the reference may dangle.
        case none = 0
        /// Deleting the target deletes the record holding this reference.
        case deleteSelf = 1
        /// The target must exist when saved and cannot be deleted while referred to.
        case validate = 2
    }

    /// The record pointed at.
    public var recordID: RecordID
    /// The reference's action.
    public var action: Action

    /// A reference to `recordID` with `action` (default `none`).
    public init(recordID: RecordID, action: Action = .none) {
        self.recordID = recordID
        self.action = action
    }

    /// `→target (action)`.
    public var description: String { "→\(recordID) (\(action))" }
}
