import ArgumentParser
import CumulusLog
import CumulusModel
import CumulusTools

/// Where a record or an event is: the database and zone options the tools share.
struct ScopeOptions: ParsableArguments {
    @Option(help: "The database: container/environment/scope[/owner] as the tools print it, a container, or public|private|shared.")
    var database: String?

    @Option(help: "The zone: its name, or name:owner.")
    var zone: String?

    var matcher: ScopeMatcher { ScopeMatcher(database: database, zone: zone) }
}

/// Parses a `SEQ|TIME` argument and resolves it in `store`.
func resolvePoint(_ text: String, in store: LogStore) throws -> UInt64 {
    try PointInTime(parsing: text).resolve(in: store)
}

/// A record field's value for people: CloudKit JSON, and never an encrypted value.
func describeFields(_ record: Record) -> [String] {
    var lines = record.fields.keys.sorted().map { "  \($0) = \(FieldChange.render(record.fields[$0]))" }
    lines += record.encryptedValues.keys.sorted().map { "  \($0) = (encrypted)" }
    return lines
}
