import ArgumentParser
import CumulusEngine
import Foundation

/// `cumulus serve`'s and `cumulus collect-assets`' say in asset collection
/// (``AssetCollector``); defaults are the collector's.
struct AssetCollectionOptions: ParsableArguments {
    @Option(help: "Seconds between rounds of deleting asset files no reachable record version refers to.")
    var assetCollectInterval = 600
    @Option(help: "Seconds after its upload an unreferenced asset file is safe from collection (at least the upload URL's 900).")
    var assetGrace = Int(AssetCollector.defaultGrace.components.seconds)

    func validate() throws {
        guard assetCollectInterval >= 1 else { throw ValidationError("--asset-collect-interval is at least 1 second") }
        guard assetGrace >= 0 else { throw ValidationError("--asset-grace is not negative") }
    }

    /// The interval between rounds.
    var interval: Duration { .seconds(assetCollectInterval) }
    /// The grace.
    var grace: Duration { .seconds(assetGrace) }
}

/// `cumulus collect-assets`: one round of asset collection on a data directory (a
/// stopped node, or a running one: the store's lock keeps the two apart).
struct CollectAssetsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "collect-assets",
        abstract: "Delete asset files that no current record and no record version in the retained log refers to.")

    @OptionGroup var options: LogCommand.DataOptions
    @OptionGroup var collection: AssetCollectionOptions

    func run() throws {
        let container = try openContainer(options.data)
        defer { container.close() }
        let report = try AssetCollector(container: container, grace: collection.grace).collect()
        for checksum in report.collected { print("deleted \(checksum)") }
        print(
            "collect-assets: deleted \(report.collected.count), kept \(report.referenced) referenced and \(report.young) "
                + "within the grace; removed \(report.abandonedUploads) abandoned uploads")
    }
}
