/// What a share lets a participant (or anyone with its link) do (`Docs/DATA-MODEL.md`, "Sharing").
/// The raw values are CloudKit's own, so they can be stored in the log unchanged.
public enum SharePermission: UInt8, Sendable, Hashable, CaseIterable, Comparable {
    /// No access (only meaningful as a share's public permission).
    case none = 1
    /// Fetch, query and follow changes.
    case readOnly = 2
    /// Read, and save or delete the shared records (never the share's root or the share).
    case readWrite = 3

    /// The wire name (`NONE`, `READ_ONLY`, `READ_WRITE`).
    public var wireName: String {
        switch self {
        case .none: "NONE"
        case .readOnly: "READ_ONLY"
        case .readWrite: "READ_WRITE"
        }
    }

    /// Parses a wire name.
    public init?(wireName: String) {
        guard let found = Self.allCases.first(where: { $0.wireName == wireName }) else { return nil }
        self = found
    }

    /// Orders by how much is allowed.
    public static func < (lhs: SharePermission, rhs: SharePermission) -> Bool { lhs.rawValue < rhs.rawValue }
}
