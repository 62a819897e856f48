extension CumulusError {
    /// A refusal of schema text at `token`. Every one starts "line L, column C: " (both
    /// 1-based, the column in Unicode scalars), so an editor can jump to it.
    static func schema(_ problem: String, at token: SchemaToken) -> CumulusError {
        CumulusError(.invalidArguments, "line \(token.line), column \(token.column): \(problem)")
    }

    /// A refusal of `token` where the grammar wanted `expected`:
    /// "line L, column C: expected …, found …".
    static func schema(expected: String, found token: SchemaToken) -> CumulusError {
        schema("expected \(expected), found \(token.display)", at: token)
    }

    /// A refusal of a schema deploy that would take something away.
    static func schemaChange(_ change: String) -> CumulusError {
        CumulusError(.invalidArguments, "\(change); a deploy may only add")
    }
}
