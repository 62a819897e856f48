import CumulusEngine
import CumulusServer

/// Opens the auth table of a data directory (creating the directory if needed).
func openAuth(_ path: String) throws -> AuthStore {
    let container = try Container(path: path)
    return try AuthStore(environment: container.store.logEnvironment)
}
