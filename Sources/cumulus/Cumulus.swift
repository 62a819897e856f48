import ArgumentParser

/// The `cumulus` command: the server and the operator tools.
@main
struct Cumulus: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cumulus",
        abstract: "A self-hosted record database with CloudKit's data model, built on an event-sourced log.",
        discussion: """
            Every save, delete and cascade is a commit appended to a zstd-compressed, hash-chained
            log on LMDB; views are kept in step with it and can be rebuilt from it.
            """,
        version: CumulusVersion.string,
        subcommands: [ServeCommand.self, StatusCommand.self, PromoteCommand.self, UsersCommand.self, TokensCommand.self, KeysCommand.self, LogCommand.self, VerifyCommand.self, RebuildCommand.self, CollectAssetsCommand.self, SchemaCommand.self, RolesCommand.self]
            + [HistoryCommand.self, ShowCommand.self, ReplayCommand.self, CheckpointCommand.self, DiffCommand.self, BisectCommand.self, AuditCommand.self]
    )
}

/// The version printed by `cumulus --version`.
enum CumulusVersion {
    static let string = "0.1.0"
}
