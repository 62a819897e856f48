/// Parses CloudKit's text schema language ("Integrating a Text-Based Schema into Your
/// Workflow") into a ``Schema``.
///
///     create-schema:  DEFINE SCHEMA [ { create-role | record-type } ";" ] ...
///     create-role:    CREATE ROLE role-name
///     record-type:    RECORD TYPE type-name ( [ field | grant ] [ "," ... ] )
///     field:          field-name data-type [ QUERYABLE | SORTABLE | SEARCHABLE ] ...
///     grant:          GRANT { READ | CREATE | WRITE } [ "," ... ] TO role-name
///     data-type:      primitive-type | LIST "<" primitive-type ">"
///     primitive-type: ASSET | BYTES | DOUBLE | INT64 | LOCATION | REFERENCE | STRING | TIMESTAMP
///                     | ENCRYPTED { BYTES | STRING | DOUBLE | INT64 | LOCATION | TIMESTAMP }
///                     | NUMBER [ PREFERRED AS { INT64 | DOUBLE } ]
///
/// Keywords are case-insensitive. A name is a word or a double-quoted name; quoting
/// lets a name be a keyword (`"type"`) or start with `_` (`"___createTime"`,
/// `"_world"`). Unquoted words are read as names wherever the grammar cannot mean a
/// keyword, so only `GRANT` at the start of an entry and a permission after a
/// grant's `,` must be quoted to be names; ``SchemaPrinter`` quotes every keyword.
/// Liberal where it costs nothing: the `;` after the last definition, stray `;`s, a
/// `,` before `)` and an empty `( )` are accepted, and so is an option repeated on
/// one field.
///
/// Names: record types, user fields and custom roles are `[A-Za-z][A-Za-z0-9_]*`, at
/// most 255 bytes; `_` starts only the system fields (``SystemField``, each with its
/// fixed type) and the built-in roles (``SecurityRole``). A name is declared once,
/// and every granted role is built in or created somewhere in the schema.
///
/// Types and options: `ENCRYPTED` takes only ``SchemaFieldType/encryptable``
/// primitives; lists do not nest; `ASSET` and `ENCRYPTED` fields take no index
/// option; `SEARCHABLE` takes only `STRING` and `LIST<STRING>`.
///
/// Every refusal is `CumulusError(.invalidArguments)` whose message starts
/// "line L, column C: " at the offending token, and says what was expected. Parsing
/// is linear in the input and recurses nowhere, so any text parses or fails cleanly.
public enum SchemaParser {
    /// Parses `text`, the whole of a `DEFINE SCHEMA`, into a normalized schema.
    public static func parse(_ text: String) throws -> Schema {
        var syntax = Syntax(text)
        return try syntax.parseSchema()
    }

    /// Whether `name` is a plain identifier: `[A-Za-z][A-Za-z0-9_]*`, at most 255 bytes.
    static func isIdentifier(_ name: String) -> Bool {
        let bytes = name.utf8
        guard let first = bytes.first, bytes.count <= 255 else { return false }
        let lowered = first | 0x20  // an ASCII letter's lower case differs only in bit 5
        guard lowered >= UInt8(ascii: "a") && lowered <= UInt8(ascii: "z") else { return false }
        for byte in bytes where !SchemaLexer.isWordByte(byte) { return false }
        return true
    }

    private static let identifierRule = "[A-Za-z][A-Za-z0-9_]*, at most 255 bytes"
    private static let dataTypes =
        "a data type (STRING, INT64, DOUBLE, TIMESTAMP, REFERENCE, ASSET, BYTES, LOCATION, NUMBER, ENCRYPTED … or LIST<…>)"
    private static let fieldOptions = "a field option (QUERYABLE, SORTABLE, SEARCHABLE), ',' or ')'"

    private static func permission(_ keyword: SchemaToken.Keyword?) -> Grant.Permissions? {
        switch keyword {
        case .read: .read
        case .create: .create
        case .write: .write
        default: nil
        }
    }

    private static func option(_ keyword: SchemaToken.Keyword?) -> IndexOptions? {
        switch keyword {
        case .queryable: .queryable
        case .sortable: .sortable
        case .searchable: .searchable
        default: nil
        }
    }
}

extension SchemaParser {
    /// The parse in progress: the next token and what has been declared. Tokens are
    /// read as the grammar needs them (one of lookahead), so a refusal stops reading.
    private struct Syntax {
        private var lexer: SchemaLexer
        private var peek: SchemaToken
        private var roles: Set<String> = []
        private var recordTypes: [String: RecordTypeSchema] = [:]
        /// Granted roles that are not built in, checked once every `CREATE ROLE` is read.
        private var customGrants: [(role: String, token: SchemaToken)] = []

        init(_ text: String) {
            lexer = SchemaLexer(text)
            peek = lexer.next()
        }

        /// The next token's keyword, if it is a word that spells one.
        private var keyword: SchemaToken.Keyword? { peek.keyword }

        private mutating func advance() {
            peek = lexer.next()
        }

        private func expected(_ what: String) -> CumulusError {
            .schema(expected: what, found: peek)
        }

        /// Consumes `word`, or refuses what is there as not `what`.
        private mutating func expect(_ word: SchemaToken.Keyword, _ what: String? = nil) throws {
            guard keyword == word else { throw expected(what ?? word.rawValue) }
            advance()
        }

        /// Consumes a word or quoted name; its rules are the caller's to check.
        private mutating func name(_ what: String) throws -> (name: String, token: SchemaToken) {
            let token = peek
            switch token.kind {
            case .word(let name, _), .quoted(let name):
                advance()
                return (name, token)
            default:
                throw expected(what)
            }
        }

        // MARK: Definitions

        mutating func parseSchema() throws -> Schema {
            try expect(.define, "DEFINE SCHEMA")
            try expect(.schema)
            while peek.kind != .end {
                if peek.kind == .semicolon {
                    advance()
                    continue
                }
                let definition: String
                switch keyword {
                case .create:
                    try parseRole()
                    definition = "the role"
                case .record:
                    try parseRecordType()
                    definition = "the record type"
                default:
                    throw expected("CREATE ROLE, RECORD TYPE or the end of the schema")
                }
                guard peek.kind == .semicolon || peek.kind == .end else { throw expected("';' after \(definition)") }
            }
            for grant in customGrants where !roles.contains(grant.role) {
                throw CumulusError.schema(
                    "role '\(SchemaToken.excerpt(grant.role))' is neither built in (_world, _icloud, _creator) "
                        + "nor created with CREATE ROLE", at: grant.token)
            }
            return Schema(roles: Array(roles), recordTypes: Array(recordTypes.values))
        }

        private mutating func parseRole() throws {
            try expect(.create)
            try expect(.role, "ROLE after CREATE")
            let (role, token) = try name("a role name after CREATE ROLE")
            if SecurityRole.builtIn.contains(role) {
                throw CumulusError.schema("role '\(role)' is built in and cannot be created", at: token)
            }
            guard SchemaParser.isIdentifier(role) else {
                throw CumulusError.schema(expected: "a role name (\(SchemaParser.identifierRule))", found: token)
            }
            guard roles.insert(role).inserted else {
                throw CumulusError.schema("role '\(role)' is created twice", at: token)
            }
        }

        private mutating func parseRecordType() throws {
            try expect(.record)
            try expect(.type, "TYPE after RECORD")
            let (typeName, token) = try name("a record type name after RECORD TYPE")
            guard SchemaParser.isIdentifier(typeName) else {
                throw CumulusError.schema(
                    expected: "a record type name (\(SchemaParser.identifierRule))", found: token)
            }
            guard recordTypes[typeName] == nil else {
                throw CumulusError.schema("record type '\(typeName)' is declared twice", at: token)
            }
            guard peek.kind == .leftParen else { throw expected("'(' after RECORD TYPE \(typeName)") }
            advance()
            var fields: [String: FieldSchema] = [:]
            var grants: [Grant] = []
            while peek.kind != .rightParen {
                if keyword == .grant {
                    grants.append(try parseGrant())
                } else if case .word = peek.kind {
                    try parseField(into: &fields, of: typeName)
                } else if case .quoted = peek.kind {
                    try parseField(into: &fields, of: typeName)
                } else {
                    throw expected("a field name, GRANT or ')'")
                }
                if peek.kind == .comma {
                    advance()
                } else if peek.kind != .rightParen {
                    throw expected("',' or ')'")
                }
            }
            advance()
            // Schema's initializer normalizes every type: no need to do it twice.
            var type = RecordTypeSchema(name: typeName)
            type.fields = Array(fields.values)
            type.grants = grants
            recordTypes[typeName] = type
        }

        // MARK: Entries

        private mutating func parseGrant() throws -> Grant {
            try expect(.grant)
            var permissions: Grant.Permissions = []
            while true {
                guard let permission = SchemaParser.permission(keyword) else {
                    throw expected(permissions.isEmpty ? "READ, CREATE or WRITE after GRANT" : "READ, CREATE or WRITE after ','")
                }
                permissions.insert(permission)
                advance()
                guard peek.kind == .comma else { break }
                advance()
            }
            try expect(.to, "',' or TO")
            let (role, token) = try name("a role name after TO")
            if !SecurityRole.builtIn.contains(role) { customGrants.append((role, token)) }
            return Grant(permissions: permissions, role: role)
        }

        private mutating func parseField(into fields: inout [String: FieldSchema], of typeName: String) throws {
            let (fieldName, nameToken) = try name("a field name")
            let system = SystemField(rawValue: fieldName)
            if system == nil {
                if fieldName.hasPrefix("___") {
                    let known = SystemField.allCases.map(\.rawValue).joined(separator: ", ")
                    throw CumulusError.schema(expected: "a system field (\(known))", found: nameToken)
                }
                guard SchemaParser.isIdentifier(fieldName) else {
                    throw CumulusError.schema(
                        expected: "a field name (\(SchemaParser.identifierRule); '_' starts only the system fields)",
                        found: nameToken)
                }
            }
            guard fields[fieldName] == nil else {
                throw CumulusError.schema("field '\(fieldName)' is declared twice in record type '\(typeName)'", at: nameToken)
            }
            let typeToken = peek
            let type = try parseType()
            if let system, type != system.type {
                throw CumulusError.schema(
                    "expected \(system.type.schemaText) (the fixed type of system field '\(fieldName)'), "
                        + "found \(type.schemaText)", at: typeToken)
            }
            var indexes: IndexOptions = []
            while let option = SchemaParser.option(keyword) {
                let optionToken = peek
                let optionName = optionToken.keyword?.rawValue ?? ""
                if type.primitive == .asset || type.isEncrypted {
                    throw CumulusError.schema(
                        "\(optionName) cannot apply to '\(fieldName)' of type \(type.schemaText): "
                            + "ASSET and ENCRYPTED fields are not indexed", at: optionToken)
                }
                if option == .searchable && type.primitive != .string {
                    throw CumulusError.schema(
                        "SEARCHABLE applies only to STRING and LIST<STRING>, and '\(fieldName)' is "
                            + type.schemaText, at: optionToken)
                }
                indexes.insert(option)
                advance()
            }
            if peek.kind != .comma && peek.kind != .rightParen {
                if keyword == .preferred {
                    throw CumulusError.schema(
                        "expected \(SchemaParser.fieldOptions), found 'PREFERRED' (PREFERRED AS applies only to NUMBER)",
                        at: peek)
                }
                throw expected(SchemaParser.fieldOptions)
            }
            fields[fieldName] = FieldSchema(name: fieldName, type: type, indexes: indexes)
        }

        // MARK: Types

        private mutating func parseType() throws -> SchemaFieldType {
            guard keyword == .list else { return try parsePrimitive(SchemaParser.dataTypes) }
            advance()
            guard peek.kind == .less else { throw expected("'<' after LIST") }
            advance()
            if keyword == .list { throw expected("a primitive type inside LIST<…> (lists do not nest)") }
            var type = try parsePrimitive("a primitive type inside LIST<…>")
            guard peek.kind == .greater else { throw expected("'>' to close LIST<…>") }
            advance()
            type.isList = true
            return type
        }

        private mutating func parsePrimitive(_ what: String) throws -> SchemaFieldType {
            if keyword == .encrypted {
                advance()
                guard let primitive = keyword?.primitive,
                    SchemaFieldType.encryptable.contains(primitive)
                else { throw expected("BYTES, STRING, DOUBLE, INT64, LOCATION or TIMESTAMP after ENCRYPTED") }
                advance()
                return SchemaFieldType(primitive, encrypted: true)
            }
            guard let primitive = keyword?.primitive else { throw expected(what) }
            advance()
            guard primitive == .number, keyword == .preferred else { return SchemaFieldType(primitive) }
            advance()
            try expect(.as, "AS after PREFERRED")
            guard let preferred = keyword?.primitive,
                preferred == .int64 || preferred == .double
            else { throw expected("INT64 or DOUBLE after PREFERRED AS") }
            advance()
            return SchemaFieldType(.number, preferred: preferred)
        }
    }
}
