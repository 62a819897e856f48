import CumulusModel

/// CloudKit schema text, as `schema/import` and `cumulus schema import` take it:
/// parsed, and an accepted schema printed and parsed again must be the same schema.
enum SchemaTarget {
    static func run(_ input: [UInt8]) -> FuzzOutcome {
        let schema: Schema
        do {
            schema = try SchemaParser.parse(String(decoding: input, as: UTF8.self))
        } catch let error as CumulusError {
            return .refused("\(error.code): \(error.message)")
        } catch {
            return .broken("threw \(type(of: error)): \(error)")
        }
        let printed = SchemaPrinter.print(schema)
        do {
            let again = try SchemaParser.parse(printed)
            return again == schema ? .accepted : .broken("printed and parsed again, the schema differs:\n\(printed)")
        } catch {
            return .broken("the printed schema does not parse (\(error)):\n\(printed)")
        }
    }

    static func seeds() -> [[UInt8]] {
        [
            """
            DEFINE SCHEMA
                RECORD TYPE TodoItem (
                    "___recordID" REFERENCE QUERYABLE,
                    list REFERENCE QUERYABLE,
                    dueDate TIMESTAMP SORTABLE,
                    priority INT64 SORTABLE,
                    title STRING SEARCHABLE,
                    notes STRING SEARCHABLE,
                    tags LIST<STRING> SEARCHABLE,
                    done INT64
                );
            """,
            """
            DEFINE SCHEMA
                CREATE ROLE editor;
                RECORD TYPE Note (
                    "___createTime" TIMESTAMP SORTABLE,
                    body STRING QUERYABLE SORTABLE SEARCHABLE,
                    place LOCATION QUERYABLE,
                    ratio DOUBLE,
                    data BYTES,
                    file ASSET,
                    GRANT WRITE TO "_creator",
                    GRANT CREATE TO "_icloud",
                    GRANT READ TO "_world",
                    GRANT WRITE, CREATE TO editor
                );
                RECORD TYPE Users ( roles LIST<INT64> );
            """,
        ].map { Array($0.utf8) }
    }
}
