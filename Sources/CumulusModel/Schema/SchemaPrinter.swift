/// Prints a ``Schema`` as canonical schema text: equal schemas print to the same
/// bytes, and the text parses back (``SchemaParser``) to an equal schema.
///
///     DEFINE SCHEMA
///         CREATE ROLE Editor;
///         RECORD TYPE Empty ( );
///         RECORD TYPE Note (
///             "___createTime" TIMESTAMP QUERYABLE SORTABLE,
///             title STRING QUERYABLE SEARCHABLE,
///             GRANT READ, CREATE, WRITE TO "_creator",
///             GRANT READ TO Editor
///         );
///
/// Roles first, then record types, each sorted by UTF-8 bytes; fields in the type's
/// order (system fields, then user fields by name); options in the order QUERYABLE
/// SORTABLE SEARCHABLE; one `GRANT` per role (by role name) with permissions in the
/// order READ, CREATE, WRITE. Only declared grants print: a type without any keeps
/// CloudKit's defaults when read back. A name is double-quoted when it starts with
/// `_`, is not a plain identifier, or spells a keyword in any case.
///
/// Names the parser would refuse (one holding a `"`, say) still print, quoted, and
/// the text then does not parse: only valid schemas round-trip.
public enum SchemaPrinter {
    /// The canonical text of `schema`.
    public static func print(_ schema: Schema) -> String {
        let schema = schema.normalized()
        var out = "DEFINE SCHEMA\n"
        for role in schema.roles {
            out += "    CREATE ROLE \(name(role));\n"
        }
        for type in schema.recordTypes {
            let entries = type.fields.map(field) + type.grants.map(grant)
            if entries.isEmpty {
                out += "    RECORD TYPE \(name(type.name)) ( );\n"
                continue
            }
            out += "    RECORD TYPE \(name(type.name)) (\n"
            out += entries.map { "        " + $0 }.joined(separator: ",\n")
            out += "\n    );\n"
        }
        return out
    }

    /// `name`, double-quoted unless it is a plain identifier that no keyword spells.
    static func name(_ name: String) -> String {
        SchemaParser.isIdentifier(name) && SchemaToken.Keyword(spelling: name) == nil ? name : "\"\(name)\""
    }

    private static func field(_ field: FieldSchema) -> String {
        var text = "\(name(field.name)) \(field.type.schemaText)"
        if field.indexes.contains(.queryable) { text += " QUERYABLE" }
        if field.indexes.contains(.sortable) { text += " SORTABLE" }
        if field.indexes.contains(.searchable) { text += " SEARCHABLE" }
        return text
    }

    private static func grant(_ grant: Grant) -> String {
        var permissions: [String] = []
        if grant.permissions.contains(.read) { permissions.append("READ") }
        if grant.permissions.contains(.create) { permissions.append("CREATE") }
        if grant.permissions.contains(.write) { permissions.append("WRITE") }
        return "GRANT \(permissions.joined(separator: ", ")) TO \(name(grant.role))"
    }
}
