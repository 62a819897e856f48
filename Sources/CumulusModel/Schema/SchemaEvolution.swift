/// The rule for changing a production schema: a deploy may only add.
///
/// Records already saved under the old schema must stay readable, so a deploy may
/// not remove a record type, remove a user field of a kept type, or change a field's
/// type. It may add types and fields, settle a `NUMBER` field's kind (`NUMBER` to
/// `NUMBER PREFERRED AS INT64|DOUBLE`: CloudKit's just-in-time number fields are
/// decided this way), and change index options, grants and roles as it likes —
/// indexes are rebuilt from the records and grants are checked on each request.
///
/// System fields always exist, so leaving one undeclared only drops its indexes.
public enum SchemaEvolution {
    /// Throws `CumulusError(.invalidArguments)` naming the first type or field (in
    /// sorted order) that `new` would remove or retype.
    public static func checkAdditive(from old: Schema, to new: Schema) throws {
        for oldType in old.normalized().recordTypes {
            guard let newType = new.recordType(oldType.name) else {
                throw CumulusError.schemaChange("record type '\(oldType.name)' would be removed")
            }
            for oldField in oldType.fields {
                let path = "\(oldType.name).\(oldField.name)"
                guard let newField = newType.field(oldField.name) else {
                    if oldField.systemField != nil { continue }
                    throw CumulusError.schemaChange("field '\(path)' would be removed")
                }
                if !allowsTypeChange(from: oldField.type, to: newField.type) {
                    throw CumulusError.schemaChange(
                        "field '\(path)' would change type from \(oldField.type.schemaText) "
                            + "to \(newField.type.schemaText)")
                }
            }
        }
    }

    /// Whether a field of type `old` may become `new`: the same type, or a `NUMBER`
    /// without a preference gaining one.
    private static func allowsTypeChange(from old: SchemaFieldType, to new: SchemaFieldType) -> Bool {
        if old == new { return true }
        var settled = old
        settled.preferred = new.preferred
        return old.primitive == .number && old.preferred == nil && new.preferred != nil && settled == new
    }
}
