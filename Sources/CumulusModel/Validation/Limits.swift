/// CloudKit's limits as Cumulus enforces them (`Docs/DATA-MODEL.md`, "Limits").
public enum Limits {
    /// Longest record name, zone name, owner name, record type or field name.
    public static let maxNameLength = 255
    /// Largest encoded record, fields plus system fields (assets' bytes not counted): 1 MiB.
    public static let maxRecordSize = 1 << 20
    /// Most `deleteSelf` references that may point at one record.
    public static let maxDeleteSelfReferencesPerTarget = 750
    /// Most saves + deletes in one modify operation through the Swift API.
    public static let maxItemsPerOperation = 400
    /// Most operations in one HTTP `records/modify` request.
    public static let maxItemsPerHTTPRequest = 200
}
