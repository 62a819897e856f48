import Testing
@testable import CumulusModel

@Suite("Schema printer: canonical text")
struct SchemaPrinterTests {
    @Test("the canonical format, pinned")
    func canonicalFormat() throws {
        let schema = Schema(
            roles: ["Editor"],
            recordTypes: [
                RecordTypeSchema(
                    name: "Note",
                    fields: [
                        FieldSchema(name: "title", type: SchemaFieldType(.string), indexes: [.searchable, .queryable]),
                        FieldSchema(name: "___createTime", type: SchemaFieldType(.timestamp), indexes: [.sortable, .queryable]),
                        FieldSchema(name: "count", type: SchemaFieldType(.number, preferred: .int64)),
                        FieldSchema(name: "tags", type: SchemaFieldType(.string, list: true), indexes: .queryable),
                        FieldSchema(name: "secret", type: SchemaFieldType(.bytes, encrypted: true)),
                        FieldSchema(name: "hidden", type: SchemaFieldType(.string, encrypted: true, list: true)),
                        FieldSchema(name: "size", type: SchemaFieldType(.number)),
                    ],
                    grants: [
                        Grant(permissions: [.write, .read], role: "Editor"),
                        Grant(permissions: .read, role: SecurityRole.world),
                        Grant(permissions: .create, role: SecurityRole.world),
                        Grant(permissions: [.write, .create, .read], role: SecurityRole.creator),
                    ]),
                RecordTypeSchema(name: "Empty"),
            ])
        let expected = """
            DEFINE SCHEMA
                CREATE ROLE Editor;
                RECORD TYPE Empty ( );
                RECORD TYPE Note (
                    "___createTime" TIMESTAMP QUERYABLE SORTABLE,
                    count NUMBER PREFERRED AS INT64,
                    hidden LIST<ENCRYPTED STRING>,
                    secret ENCRYPTED BYTES,
                    size NUMBER,
                    tags LIST<STRING> QUERYABLE,
                    title STRING QUERYABLE SEARCHABLE,
                    GRANT READ, WRITE TO Editor,
                    GRANT READ, CREATE, WRITE TO "_creator",
                    GRANT READ, CREATE TO "_world"
                );

            """
        let printed = SchemaPrinter.print(schema)
        #expect(printed == expected)
        #expect(try SchemaParser.parse(printed) == schema)
    }

    @Test("the empty schema prints as DEFINE SCHEMA alone and parses back")
    func emptySchema() throws {
        #expect(SchemaPrinter.print(.empty) == "DEFINE SCHEMA\n")
        #expect(try SchemaParser.parse(SchemaPrinter.print(.empty)) == .empty)
    }

    @Test("keywords in any case, system names and non-identifiers are quoted; plain names are not")
    func quoting() {
        for keyword in ["type", "String", "grant", "Int64", "list", "as", "to", "define", "Preferred", "searchable", "asset"] {
            #expect(SchemaPrinter.name(keyword) == "\"\(keyword)\"")
        }
        for name in ["___createTime", "_world", "_creator", "a b", "", "1st", "é"] {
            #expect(SchemaPrinter.name(name) == "\"\(name)\"")
        }
        for name in ["Note", "Users", "title_2", "Strings", "types", "asSet2"] {
            #expect(SchemaPrinter.name(name) == name)
        }
        let keywords = Set(SchemaToken.Keyword.allCases.map(\.rawValue))
        #expect(keywords.isSuperset(of: SchemaFieldType.Primitive.allCases.map(\.rawValue)))
        for keyword in keywords {
            #expect(SchemaPrinter.name(keyword.lowercased()) == "\"\(keyword.lowercased())\"")
        }
    }

    @Test("keyword-named types, fields and roles print quoted and parse back")
    func keywordNamesRoundTrip() throws {
        let schema = Schema(
            roles: ["Read"],
            recordTypes: [
                RecordTypeSchema(
                    name: "Record",
                    fields: [
                        FieldSchema(name: "type", type: SchemaFieldType(.string)),
                        FieldSchema(name: "grant", type: SchemaFieldType(.int64), indexes: .queryable),
                        FieldSchema(name: "___etag", type: SchemaFieldType(.string), indexes: .queryable),
                    ],
                    grants: [Grant(permissions: .read, role: "Read")])
            ])
        let printed = SchemaPrinter.print(schema)
        #expect(
            printed == """
                DEFINE SCHEMA
                    CREATE ROLE "Read";
                    RECORD TYPE "Record" (
                        "___etag" STRING QUERYABLE,
                        "grant" INT64 QUERYABLE,
                        "type" STRING,
                        GRANT READ TO "Read"
                    );

                """)
        #expect(try SchemaParser.parse(printed) == schema)
    }
}
