import CumulusEngine
import CumulusModel
import CumulusTestSupport
import Foundation
import Testing

@Suite("cumulus verify and collect-assets on asset files")
struct AssetVerifyCommandTests {
    @Test("verify exits 0 with sound files and non-zero naming the checksum once a stored file's bytes are altered")
    func verifyNamesAlteredAsset() async throws {
        guard CumulusExecutable.isBuilt() else { return }
        let temporary = TemporaryDirectory("asset-cli")
        defer { temporary.remove() }
        let path = temporary.path
        let asset: Asset
        do {
            let container = try Container(path: path)
            let db = container.privateDatabase(container: ContainerWorld.containerID, user: ContainerWorld.user)
            asset = try await db.storeAsset(Array("a photo of the sea".utf8), as: ContainerWorld.user)
            _ = try await db.modify(
                saving: [Record.make("Photo", "sea", in: .default, ["image": .asset(asset)])], as: ContainerWorld.user)
            container.close()
        }
        var result = try CumulusExecutable.run(["verify", "--data", path])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("assets: 1 referenced files present"), "\(result.output)")

        let file = path + "/assets/" + asset.fileChecksum.prefix(2) + "/" + asset.fileChecksum
        try Data("a photo of the see".utf8).write(to: URL(fileURLWithPath: file))
        result = try CumulusExecutable.run(["verify", "--data", path])
        #expect(result.status != 0)
        #expect(result.output.contains("asset DAMAGED: asset \(asset.fileChecksum) (held by record sea)"), "\(result.output)")
        #expect(result.output.contains("verify: FAILED"))

        // collect-assets keeps a file a record holds, however old.
        result = try CumulusExecutable.run(["collect-assets", "--data", path, "--asset-grace", "0"])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("deleted 0, kept 1 referenced"), "\(result.output)")
    }
}
