import CumulusEngine
import CumulusModel
import CumulusViews
import Foundation

/// A container in its own temporary directory, with one user's private database and
/// the helpers tests of the engine, the tools and the CLI share: zones, saves, the
/// views' digests. Closed and removed when the world is released.
///
/// Test targets build their own world on it (`EngineWorld`, `ToolWorld`), adding what
/// only their tests use.
open class ContainerWorld: @unchecked Sendable {
    /// The user whose private database ``db`` is.
    public static let user = "_alice0000000000000000000000000001"
    /// A second user, for tests of what one user may not see or do.
    public static let otherUser = "_bob00000000000000000000000000002"
    /// The container identifier the world's database belongs to.
    public static let containerID = "iCloud.com.example.todo"

    /// The world's temporary directory, removed with the world.
    public let directory: TemporaryDirectory
    /// The container's data directory: ``directory``'s path, or a folder inside it.
    public let path: String
    /// The open container.
    public let container: Container
    /// ``user``'s private database in ``containerID``.
    public let db: Database

    /// Opens a new container in a temporary directory named after `label`; at
    /// `dataFolder` inside it if given (so scratch paths can sit beside the data).
    public init(_ label: String = #function, dataFolder: String? = nil) throws {
        let directory = TemporaryDirectory(label)
        self.directory = directory
        path = dataFolder.map(directory.appending) ?? directory.path
        container = try Container(path: path)
        db = container.privateDatabase(container: Self.containerID, user: Self.user)
    }

    deinit {
        container.close()
        directory.remove()
    }

    /// A custom zone of ``user``'s, created.
    @discardableResult
    public func makeZone(_ name: String = "Lists") async throws -> ZoneID {
        let zone = ZoneID(zoneName: name, ownerName: Self.user)
        let results = try await db.saveZones([zone], as: Self.user)
        _ = try results[0].result.get()
        return zone
    }

    /// Saves records (force-style by default, no tag checks) and returns them as stored.
    @discardableResult
    public func save(_ records: [Record], atomic: Bool = true, policy: SavePolicy = .allKeys) async throws -> [Record] {
        let result = try await db.modify(saving: records, savePolicy: policy, atomic: atomic, as: Self.user)
        return try result.saveResults.map { try $0.result.get() }
    }

    /// Digests of every view table.
    public func digests() throws -> [ViewDigest] {
        try container.viewDigests()
    }
}
