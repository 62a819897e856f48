import Testing
@testable import CumulusModel

/// `text` parsed; a refusal fails the test and gives the empty schema.
private func parsed(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) -> Schema {
    do {
        return try SchemaParser.parse(text)
    } catch {
        Issue.record("refused: \(error)\n\(text)", sourceLocation: sourceLocation)
        return .empty
    }
}

/// Asserts `text` is refused with `invalidArguments` at `line`/`column`, with a
/// message containing every one of `phrases`.
private func expectRefusal(
    _ text: String, line: Int, column: Int, _ phrases: String..., sourceLocation: SourceLocation = #_sourceLocation
) {
    do {
        let schema = try SchemaParser.parse(text)
        Issue.record("parsed to \(schema), expected a refusal\n\(text)", sourceLocation: sourceLocation)
    } catch let error as CumulusError {
        #expect(error.code == .invalidArguments, "\(error)", sourceLocation: sourceLocation)
        #expect(
            error.message.hasPrefix("line \(line), column \(column): "),
            "\(error.message): expected line \(line), column \(column)", sourceLocation: sourceLocation)
        for phrase in phrases {
            #expect(error.message.contains(phrase), "\(error.message) does not say \(phrase)", sourceLocation: sourceLocation)
        }
    } catch {
        Issue.record("unexpected error \(error)", sourceLocation: sourceLocation)
    }
}

/// A schema of one record type `T` whose body is `body`.
private func oneType(_ body: String) -> String {
    "DEFINE SCHEMA\nRECORD TYPE T (\n\(body)\n);\n"
}

@Suite("Schema parser: accepted text")
struct SchemaParserTests {
    @Test("Apple's example schema")
    func applesExample() throws {
        let schema = parsed("""
            DEFINE SCHEMA
                CREATE ROLE DeptManager;
                RECORD TYPE Department (
                    "___createTime" TIMESTAMP QUERYABLE SORTABLE,
                    "___recordID" REFERENCE QUERYABLE,
                    name STRING,
                    phone LIST<STRING>,
                    employees LIST<REFERENCE>,
                    GRANT WRITE TO "_creator",
                    GRANT CREATE TO "_icloud",
                    GRANT READ TO "_world",
                    GRANT WRITE, CREATE, READ TO DeptManager
                );
            """)
        #expect(schema.roles == ["DeptManager"])
        let department = try #require(schema.recordType("Department"))
        #expect(
            department.fields == [
                FieldSchema(name: "___createTime", type: SchemaFieldType(.timestamp), indexes: [.queryable, .sortable]),
                FieldSchema(name: "___recordID", type: SchemaFieldType(.reference), indexes: .queryable),
                FieldSchema(name: "employees", type: SchemaFieldType(.reference, list: true)),
                FieldSchema(name: "name", type: SchemaFieldType(.string)),
                FieldSchema(name: "phone", type: SchemaFieldType(.string, list: true)),
            ])
        #expect(
            department.grants == [
                Grant(permissions: [.read, .create, .write], role: "DeptManager"),
                Grant(permissions: .write, role: "_creator"),
                Grant(permissions: .create, role: "_icloud"),
                Grant(permissions: .read, role: "_world"),
            ])
    }

    static let everything = """
        // Every type, option, grant and system field, with all three comment styles.
        DEFINE SCHEMA
            CREATE ROLE Editor;   -- a custom role
            CREATE ROLE Auditor;
            /* a record type
               that uses everything */
            RECORD TYPE Kitchen (
                "___createTime" TIMESTAMP QUERYABLE SORTABLE,
                "___createdBy" REFERENCE QUERYABLE,
                "___etag" STRING QUERYABLE,
                "___modTime" TIMESTAMP SORTABLE,
                "___modifiedBy" REFERENCE,
                "___recordID" REFERENCE QUERYABLE,
                "___parent" REFERENCE QUERYABLE,
                "___share" REFERENCE,
                asset ASSET,
                bytes BYTES QUERYABLE,
                double DOUBLE QUERYABLE SORTABLE,
                int INT64 SORTABLE,
                location LOCATION QUERYABLE,
                number NUMBER,
                numberInt NUMBER PREFERRED AS INT64 QUERYABLE,
                numberDouble NUMBER PREFERRED AS DOUBLE SORTABLE,
                reference REFERENCE QUERYABLE,
                string STRING QUERYABLE SORTABLE SEARCHABLE,
                timestamp TIMESTAMP,
                secretBytes ENCRYPTED BYTES,
                secretString ENCRYPTED STRING,
                secretDouble ENCRYPTED DOUBLE,
                secretInt ENCRYPTED INT64,
                secretLocation ENCRYPTED LOCATION,
                secretTimestamp ENCRYPTED TIMESTAMP,
                assets LIST<ASSET>,
                byteses LIST<BYTES>,
                doubles LIST<DOUBLE> QUERYABLE,
                ints LIST<INT64> QUERYABLE SORTABLE,
                locations LIST<LOCATION>,
                numbers LIST<NUMBER>,
                numbersInt LIST<NUMBER PREFERRED AS INT64>,
                references LIST<REFERENCE> QUERYABLE,
                strings LIST<STRING> QUERYABLE SEARCHABLE,
                timestamps LIST<TIMESTAMP> SORTABLE,
                secrets LIST<ENCRYPTED STRING>,
                GRANT READ TO "_world",        // everyone reads
                GRANT CREATE TO "_icloud",
                GRANT WRITE TO "_creator",
                GRANT READ, CREATE, WRITE TO Editor,
                GRANT READ TO Auditor
            );
            RECORD TYPE Users (
                nickname STRING QUERYABLE
            );
        """

    @Test("a schema using every type, option, grant, system field and comment style round-trips")
    func everythingRoundTrips() throws {
        let schema = parsed(Self.everything)
        #expect(schema.roles == ["Auditor", "Editor"])
        let kitchen = try #require(schema.recordType("Kitchen"))
        #expect(kitchen.fields.count == 36)
        #expect(Array(kitchen.fields.prefix(8).map(\.name)) == SystemField.allCases.map(\.rawValue))
        #expect(kitchen.field("numberInt")?.type == SchemaFieldType(.number, preferred: .int64))
        #expect(kitchen.field("numberDouble")?.type == SchemaFieldType(.number, preferred: .double))
        #expect(kitchen.field("secretLocation")?.type == SchemaFieldType(.location, encrypted: true))
        #expect(kitchen.field("secrets")?.type == SchemaFieldType(.string, encrypted: true, list: true))
        #expect(kitchen.field("numbersInt")?.type == SchemaFieldType(.number, preferred: .int64, list: true))
        #expect(kitchen.field("string")?.indexes == .all)
        #expect(kitchen.grants.count == 5)
        #expect(schema.recordType("Users")?.field("nickname")?.indexes == .queryable)

        let printed = SchemaPrinter.print(schema)
        let reparsed = parsed(printed)
        #expect(reparsed == schema)
        #expect(SchemaPrinter.print(reparsed) == printed)
    }

    @Test("keywords are case-insensitive")
    func caseInsensitiveKeywords() {
        let schema = parsed("""
            define Schema
              create role Editor;
              Record Type Note (
                title string queryable Sortable SEARCHABLE,
                count number preferred as int64,
                tags list<encrypted string>,
                grant read, Write to Editor
              )
            """)
        let note = schema.recordType("Note")
        #expect(note?.field("title") == FieldSchema(name: "title", type: SchemaFieldType(.string), indexes: .all))
        #expect(note?.field("count")?.type == SchemaFieldType(.number, preferred: .int64))
        #expect(note?.field("tags")?.type == SchemaFieldType(.string, encrypted: true, list: true))
        #expect(note?.grants == [Grant(permissions: [.read, .write], role: "Editor")])
    }

    @Test("quoted names may be keywords and keep their case; unambiguous keywords need no quotes")
    func quotedNames() {
        let schema = parsed("""
            DEFINE SCHEMA
              CREATE ROLE "Read";
              RECORD TYPE "String" (
                "type" STRING,
                "GRANT" INT64,
                list LIST<STRING>,
                type2 TIMESTAMP,
                GRANT READ TO "Read"
              );
              RECORD TYPE record ( schema STRING );
            """)
        #expect(schema.roles == ["Read"])
        #expect(schema.recordType("String")?.fields.map(\.name) == ["GRANT", "list", "type", "type2"])
        #expect(schema.recordType("String")?.grants == [Grant(permissions: .read, role: "Read")])
        #expect(schema.recordType("record")?.field("schema")?.type == SchemaFieldType(.string))
    }

    @Test("system fields and built-in roles may be written without quotes")
    func unquotedUnderscoreNames() {
        let schema = parsed(oneType("___createTime TIMESTAMP SORTABLE, GRANT READ TO _world"))
        #expect(schema.recordType("T")?.field("___createTime")?.indexes == .sortable)
        #expect(schema.recordType("T")?.grants == [Grant(permissions: .read, role: "_world")])
    }

    @Test("liberal forms: no final ';', stray ';', a trailing ',', an empty type, a repeated option")
    func liberalForms() {
        let schema = parsed("""
            DEFINE SCHEMA;;
              RECORD TYPE Empty ( );
              RECORD TYPE Bare ();;
              RECORD TYPE Note (
                title STRING QUERYABLE QUERYABLE,
                GRANT READ, READ TO "_world",
              )
            """)
        #expect(schema.recordTypes.map(\.name) == ["Bare", "Empty", "Note"])
        #expect(schema.recordType("Empty")?.fields.isEmpty == true)
        #expect(schema.recordType("Note")?.field("title")?.indexes == .queryable)
        #expect(schema.recordType("Note")?.grants == [Grant(permissions: .read, role: "_world")])
        #expect(parsed("DEFINE SCHEMA") == .empty)
    }

    @Test("grants to one role merge, and a role may be created after the type that grants to it")
    func grantsMergeAndRolesResolveLate() {
        let schema = parsed("""
            DEFINE SCHEMA
              RECORD TYPE Note ( GRANT READ TO Editor, GRANT WRITE TO Editor );
              CREATE ROLE Editor;
            """)
        #expect(schema.recordType("Note")?.grants == [Grant(permissions: [.read, .write], role: "Editor")])
    }

    @Test("a type without grants keeps CloudKit's defaults")
    func defaultGrants() {
        let note = parsed(oneType("title STRING")).recordType("T")
        #expect(note?.grants == [])
        #expect(note?.effectiveGrants == SecurityRole.defaultGrants)
    }

    @Test("a record type name of 255 bytes is accepted")
    func longestTypeName() {
        let name = "N" + String(repeating: "a", count: 254)
        #expect(parsed("DEFINE SCHEMA RECORD TYPE \(name) ( )").recordType(name) != nil)
    }

    @Test("CRLF line endings count lines; tabs and BOM are whitespace")
    func lineEndings() {
        #expect(parsed("\u{FEFF}DEFINE SCHEMA\r\n\tRECORD TYPE T (\r\n\t\tx STRING\r\n\t);\r\n").recordType("T") != nil)
        expectRefusal("DEFINE SCHEMA\r\nRECORD TYPE T (\r\n  x STRNG\r\n);", line: 3, column: 5, "found 'STRNG'")
    }
}

@Suite("Schema parser: refusals name line and column")
struct SchemaParserRefusalTests {
    @Test("a misspelled data type")
    func misspelledType() {
        expectRefusal(
            "DEFINE SCHEMA\nRECORD TYPE Note (\n  title STRNG\n);", line: 3, column: 9,
            "expected a data type (STRING, INT64", "found 'STRNG'")
        expectRefusal(oneType("  title \"STRING\""), line: 3, column: 9, "expected a data type", "found '\"STRING\"'")
        expectRefusal(oneType("  title"), line: 4, column: 1, "expected a data type", "found ')'")
    }

    @Test("a missing DEFINE SCHEMA")
    func missingDefineSchema() {
        expectRefusal("", line: 1, column: 1, "expected DEFINE SCHEMA, found the end of the schema")
        expectRefusal("RECORD TYPE A ( )", line: 1, column: 1, "expected DEFINE SCHEMA, found 'RECORD'")
        expectRefusal("DEFINE\n  TABLE", line: 2, column: 3, "expected SCHEMA, found 'TABLE'")
    }

    @Test("a missing ';' between definitions")
    func missingSemicolon() {
        expectRefusal("DEFINE SCHEMA\nCREATE ROLE A\nCREATE ROLE B", line: 3, column: 1, "expected ';' after the role, found 'CREATE'")
        expectRefusal(
            "DEFINE SCHEMA\nRECORD TYPE A ( ) RECORD TYPE B ( )", line: 2, column: 19,
            "expected ';' after the record type, found 'RECORD'")
    }

    @Test("a definition that is neither a role nor a record type")
    func unknownDefinition() {
        expectRefusal("DEFINE SCHEMA\n  CREATE TABLE T", line: 2, column: 10, "expected ROLE after CREATE, found 'TABLE'")
        expectRefusal("DEFINE SCHEMA\n  INDEX T", line: 2, column: 3, "expected CREATE ROLE, RECORD TYPE or the end of the schema")
    }

    @Test("a missing '(' or ')'")
    func missingParentheses() {
        expectRefusal("DEFINE SCHEMA\nRECORD TYPE Note title STRING", line: 2, column: 18, "expected '(' after RECORD TYPE Note, found 'title'")
        expectRefusal("DEFINE SCHEMA\nRECORD TYPE Note (\n  title STRING", line: 3, column: 15, "expected a field option", "found the end of the schema")
        expectRefusal(oneType("  a STRING b STRING"), line: 3, column: 12, "expected a field option (QUERYABLE, SORTABLE, SEARCHABLE), ',' or ')'")
        expectRefusal(oneType("  a STRING,,"), line: 3, column: 12, "expected a field name, GRANT or ')', found ','")
    }

    @Test("a record type declared twice")
    func typeDeclaredTwice() {
        expectRefusal("DEFINE SCHEMA\nRECORD TYPE Note ( );\nRECORD TYPE Note ( );", line: 3, column: 13, "record type 'Note' is declared twice")
    }

    @Test("a field declared twice")
    func fieldDeclaredTwice() {
        expectRefusal(oneType("  title STRING,\n  title INT64"), line: 4, column: 3, "field 'title' is declared twice in record type 'T'")
        expectRefusal(
            oneType("  \"___etag\" STRING,\n  ___etag STRING"), line: 4, column: 3, "field '___etag' is declared twice")
    }

    @Test("a role created twice")
    func roleCreatedTwice() {
        expectRefusal("DEFINE SCHEMA\nCREATE ROLE Editor;\nCREATE ROLE Editor;", line: 3, column: 13, "role 'Editor' is created twice")
    }

    @Test("a role named like a built-in one, or not an identifier")
    func roleNamedLikeBuiltIn() {
        expectRefusal("DEFINE SCHEMA\nCREATE ROLE \"_world\";", line: 2, column: 13, "role '_world' is built in and cannot be created")
        expectRefusal("DEFINE SCHEMA\nCREATE ROLE _creator;", line: 2, column: 13, "role '_creator' is built in")
        expectRefusal("DEFINE SCHEMA\nCREATE ROLE \"_admin\";", line: 2, column: 13, "expected a role name", "found '\"_admin\"'")
        expectRefusal("DEFINE SCHEMA\nCREATE ROLE ;", line: 2, column: 13, "expected a role name after CREATE ROLE, found ';'")
    }

    @Test("a grant to a role neither built in nor created")
    func grantToUnknownRole() {
        expectRefusal(
            "DEFINE SCHEMA\nRECORD TYPE Note (\n  GRANT READ TO Editors\n);\nCREATE ROLE Editor;", line: 3, column: 17,
            "role 'Editors' is neither built in (_world, _icloud, _creator) nor created with CREATE ROLE")
        expectRefusal(oneType("  GRANT READ TO \"_everyone\""), line: 3, column: 17, "role '_everyone' is neither built in")
        expectRefusal(oneType("  GRANT READ TO \"_World\""), line: 3, column: 17, "role '_World' is neither built in")
    }

    @Test("a malformed grant")
    func malformedGrant() {
        expectRefusal(oneType("  GRANT DELETE TO \"_world\""), line: 3, column: 9, "expected READ, CREATE or WRITE after GRANT, found 'DELETE'")
        expectRefusal(oneType("  GRANT READ, TO \"_world\""), line: 3, column: 15, "expected READ, CREATE or WRITE after ',', found 'TO'")
        expectRefusal(oneType("  GRANT READ \"_world\""), line: 3, column: 14, "expected ',' or TO, found '\"_world\"'")
        expectRefusal(oneType("  GRANT READ TO ,"), line: 3, column: 17, "expected a role name after TO, found ','")
    }

    @Test("a ___ field that is not a system field")
    func unknownSystemField() {
        expectRefusal(
            oneType("  \"___createdAt\" TIMESTAMP"), line: 3, column: 3,
            "expected a system field (___createTime, ___createdBy, ___etag, ___modTime, ___modifiedBy, ___recordID, ___parent, ___share)",
            "found '\"___createdAt\"'")
    }

    @Test("a system field declared with a type other than its own")
    func systemFieldWithWrongType() {
        expectRefusal(
            oneType("  \"___createTime\" STRING QUERYABLE"), line: 3, column: 19,
            "expected TIMESTAMP (the fixed type of system field '___createTime'), found STRING")
        expectRefusal(
            oneType("  \"___recordID\" LIST<REFERENCE>"), line: 3, column: 17,
            "expected REFERENCE (the fixed type of system field '___recordID'), found LIST<REFERENCE>")
        expectRefusal(oneType("  \"___etag\" ENCRYPTED STRING"), line: 3, column: 13, "found ENCRYPTED STRING")
    }

    @Test("a user field named with a leading '_' or not an identifier")
    func badFieldNames() {
        expectRefusal(oneType("  \"_secret\" STRING"), line: 3, column: 3, "expected a field name", "found '\"_secret\"'")
        expectRefusal(oneType("  _secret STRING"), line: 3, column: 3, "'_' starts only the system fields", "found '_secret'")
        expectRefusal(oneType("  \"first name\" STRING"), line: 3, column: 3, "expected a field name", "found '\"first name\"'")
        expectRefusal(oneType("  1st STRING"), line: 3, column: 3, "expected a field name", "found '1st'")
        expectRefusal(oneType("  \"\" STRING"), line: 3, column: 3, "expected a field name", "found '\"\"'")
        expectRefusal(oneType("  \"é\" STRING"), line: 3, column: 3, "expected a field name", #"found '"\u{00E9}"'"#)
        let long = "f" + String(repeating: "x", count: 255)
        expectRefusal(oneType("  \(long) STRING"), line: 3, column: 3, "at most 255 bytes",
            "found 'f\(String(repeating: "x", count: 39))…'")
    }

    @Test("a record type named with a leading '_', not an identifier, or too long")
    func badTypeNames() {
        expectRefusal("DEFINE SCHEMA\nRECORD TYPE \"_Note\" ( );", line: 2, column: 13, "expected a record type name", "found '\"_Note\"'")
        expectRefusal("DEFINE SCHEMA\nRECORD TYPE \"cloudkit.share\" ( );", line: 2, column: 13, "expected a record type name")
        expectRefusal("DEFINE SCHEMA\nRECORD TYPE 9Lives ( );", line: 2, column: 13, "expected a record type name", "found '9Lives'")
        let long = "N" + String(repeating: "a", count: 255)
        expectRefusal("DEFINE SCHEMA\nRECORD TYPE \(long) ( );", line: 2, column: 13, "at most 255 bytes")
        expectRefusal("DEFINE SCHEMA\nRECORD TYPE ( );", line: 2, column: 13, "expected a record type name after RECORD TYPE, found '('")
    }

    @Test("ENCRYPTED on ASSET, REFERENCE, NUMBER or a list")
    func encryptedOnWrongType() {
        let expected = "expected BYTES, STRING, DOUBLE, INT64, LOCATION or TIMESTAMP after ENCRYPTED"
        expectRefusal(oneType("  photo ENCRYPTED ASSET"), line: 3, column: 19, expected, "found 'ASSET'")
        expectRefusal(oneType("  photo ENCRYPTED REFERENCE"), line: 3, column: 19, expected, "found 'REFERENCE'")
        expectRefusal(oneType("  photo ENCRYPTED NUMBER"), line: 3, column: 19, expected, "found 'NUMBER'")
        expectRefusal(oneType("  photo ENCRYPTED LIST<STRING>"), line: 3, column: 19, expected, "found 'LIST'")
        expectRefusal(oneType("  photo ENCRYPTED ENCRYPTED STRING"), line: 3, column: 19, expected, "found 'ENCRYPTED'")
    }

    @Test("PREFERRED AS other than INT64 or DOUBLE, or on anything but NUMBER")
    func badPreferred() {
        expectRefusal(oneType("  n NUMBER PREFERRED AS STRING"), line: 3, column: 25, "expected INT64 or DOUBLE after PREFERRED AS, found 'STRING'")
        expectRefusal(oneType("  n NUMBER PREFERRED AS NUMBER"), line: 3, column: 25, "expected INT64 or DOUBLE after PREFERRED AS, found 'NUMBER'")
        expectRefusal(oneType("  n NUMBER PREFERRED INT64"), line: 3, column: 22, "expected AS after PREFERRED, found 'INT64'")
        expectRefusal(
            oneType("  n STRING PREFERRED AS INT64"), line: 3, column: 12,
            "found 'PREFERRED' (PREFERRED AS applies only to NUMBER)")
        expectRefusal(oneType("  n ENCRYPTED INT64 PREFERRED AS INT64"), line: 3, column: 21, "PREFERRED AS applies only to NUMBER")
    }

    @Test("a LIST of a LIST, and malformed lists")
    func nestedList() {
        expectRefusal(
            oneType("  tags LIST<LIST<STRING>>"), line: 3, column: 13,
            "expected a primitive type inside LIST<…> (lists do not nest), found 'LIST'")
        expectRefusal(oneType("  tags LIST STRING"), line: 3, column: 13, "expected '<' after LIST, found 'STRING'")
        expectRefusal(oneType("  tags LIST<STRING"), line: 4, column: 1, "expected '>' to close LIST<…>, found ')'")
        expectRefusal(oneType("  tags LIST<>"), line: 3, column: 13, "expected a primitive type inside LIST<…>, found '>'")
    }

    @Test("SEARCHABLE on anything but STRING or LIST<STRING>")
    func searchableOnWrongType() {
        expectRefusal(
            oneType("  n INT64 SEARCHABLE"), line: 3, column: 11,
            "SEARCHABLE applies only to STRING and LIST<STRING>, and 'n' is INT64")
        expectRefusal(oneType("  n LIST<INT64> QUERYABLE SEARCHABLE"), line: 3, column: 27, "and 'n' is LIST<INT64>")
        expectRefusal(oneType("  \"___recordID\" REFERENCE SEARCHABLE"), line: 3, column: 27, "SEARCHABLE applies only to STRING")
    }

    @Test("an index option on ASSET or ENCRYPTED fields")
    func indexOnUnindexable() {
        expectRefusal(
            oneType("  photo ASSET QUERYABLE"), line: 3, column: 15,
            "QUERYABLE cannot apply to 'photo' of type ASSET: ASSET and ENCRYPTED fields are not indexed")
        expectRefusal(oneType("  photos LIST<ASSET> SORTABLE"), line: 3, column: 22, "SORTABLE cannot apply to 'photos' of type LIST<ASSET>")
        expectRefusal(oneType("  s ENCRYPTED STRING SORTABLE"), line: 3, column: 22, "SORTABLE cannot apply to 's' of type ENCRYPTED STRING")
        expectRefusal(oneType("  s LIST<ENCRYPTED STRING> searchable"), line: 3, column: 28, "SEARCHABLE cannot apply")
    }

    @Test("unterminated comments and quotes, and stray characters")
    func lexicalProblems() {
        expectRefusal("DEFINE SCHEMA\n/* open\nRECORD TYPE A ( );", line: 2, column: 1, "found an unterminated comment ('/*' without '*/')")
        expectRefusal("DEFINE SCHEMA\nRECORD TYPE \"Note ( );", line: 2, column: 13, "found an unterminated quoted name")
        expectRefusal(oneType("  title STRING #"), line: 3, column: 16, "found '#'")
        expectRefusal(oneType("  title STRING\u{0}"), line: 3, column: 15, #"found '\0'"#)
        expectRefusal(oneType("  title STRING / x"), line: 3, column: 16, "found '/'")
        expectRefusal("DEFINE SCHEMA -", line: 1, column: 15, "found '-'")
    }

    @Test("columns count Unicode scalars, not characters or bytes")
    func columnsCountScalars() {
        // `é` as e + U+0301 is one character and two scalars; 😀 is one scalar, four bytes.
        expectRefusal("DEFINE SCHEMA\n/*e\u{301}😀*/ RECORD TYPE 1 ( );", line: 2, column: 21, "found '1'")
        expectRefusal("DEFINE SCHEMA\n-- é😀\n RECORD TYPE T ( x é )", line: 3, column: 20, #"found '\u{00E9}'"#)
    }
}
