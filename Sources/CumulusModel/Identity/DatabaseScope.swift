/// Which of a container's databases a request addresses (`Docs/DATA-MODEL.md`, "Databases").
public enum DatabaseScope: UInt8, Sendable, Hashable, CaseIterable, Codable, CustomStringConvertible {
    /// One database for everybody; only the default zone.
    case `public` = 1
    /// One per user; the default zone plus the user's custom zones.
    case `private` = 2
    /// One per user; zones other users shared with them.
    case shared = 3

    /// The lower-case name used in URLs (`public`, `private`, `shared`).
    public var description: String {
        switch self {
        case .public: "public"
        case .private: "private"
        case .shared: "shared"
        }
    }

    /// Parses the lower-case name used in URLs.
    public init?(name: String) {
        switch name {
        case "public": self = .public
        case "private": self = .private
        case "shared": self = .shared
        default: return nil
        }
    }
}
