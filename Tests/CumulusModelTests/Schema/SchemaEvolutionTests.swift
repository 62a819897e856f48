import Testing
@testable import CumulusModel

/// A schema from `text`; the texts here are all valid.
private func schema(_ text: String) throws -> Schema {
    try SchemaParser.parse("DEFINE SCHEMA\n" + text)
}

/// Asserts the deploy from `old` to `new` is refused with exactly `message`.
private func expectRefused(
    from old: String, to new: String, _ message: String, sourceLocation: SourceLocation = #_sourceLocation
) throws {
    let before = try schema(old)
    let after = try schema(new)
    do {
        try SchemaEvolution.checkAdditive(from: before, to: after)
        Issue.record("allowed, expected: \(message)", sourceLocation: sourceLocation)
    } catch let error as CumulusError {
        #expect(error.code == .invalidArguments, sourceLocation: sourceLocation)
        #expect(error.message == message, sourceLocation: sourceLocation)
    }
}

/// Asserts the deploy from `old` to `new` is allowed.
private func expectAllowed(from old: String, to new: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
    let before = try schema(old)
    let after = try schema(new)
    #expect(throws: Never.self, sourceLocation: sourceLocation) { try SchemaEvolution.checkAdditive(from: before, to: after) }
}

@Suite("Schema evolution: a deploy may only add")
struct SchemaEvolutionTests {
    @Test("removing a record type is refused")
    func removingATypeIsRefused() throws {
        try expectRefused(
            from: "RECORD TYPE Note ( title STRING ); RECORD TYPE Tag ( )", to: "RECORD TYPE Tag ( )",
            "record type 'Note' would be removed; a deploy may only add")
    }

    @Test("removing a user field of a kept type is refused")
    func removingAFieldIsRefused() throws {
        try expectRefused(
            from: "RECORD TYPE Note ( title STRING, body STRING )", to: "RECORD TYPE Note ( body STRING )",
            "field 'Note.title' would be removed; a deploy may only add")
    }

    @Test("changing a field's type is refused")
    func changingATypeIsRefused() throws {
        try expectRefused(
            from: "RECORD TYPE Note ( title STRING )", to: "RECORD TYPE Note ( title INT64 )",
            "field 'Note.title' would change type from STRING to INT64; a deploy may only add")
        try expectRefused(
            from: "RECORD TYPE Note ( tags STRING )", to: "RECORD TYPE Note ( tags LIST<STRING> )",
            "field 'Note.tags' would change type from STRING to LIST<STRING>; a deploy may only add")
        try expectRefused(
            from: "RECORD TYPE Note ( body STRING )", to: "RECORD TYPE Note ( body ENCRYPTED STRING )",
            "field 'Note.body' would change type from STRING to ENCRYPTED STRING; a deploy may only add")
    }

    @Test("changing or dropping an existing NUMBER preference is refused")
    func changingAPreferenceIsRefused() throws {
        try expectRefused(
            from: "RECORD TYPE Note ( n NUMBER PREFERRED AS INT64 )", to: "RECORD TYPE Note ( n NUMBER PREFERRED AS DOUBLE )",
            "field 'Note.n' would change type from NUMBER PREFERRED AS INT64 to NUMBER PREFERRED AS DOUBLE; a deploy may only add")
        try expectRefused(
            from: "RECORD TYPE Note ( n NUMBER PREFERRED AS INT64 )", to: "RECORD TYPE Note ( n NUMBER )",
            "field 'Note.n' would change type from NUMBER PREFERRED AS INT64 to NUMBER; a deploy may only add")
        try expectRefused(
            from: "RECORD TYPE Note ( n NUMBER )", to: "RECORD TYPE Note ( n LIST<NUMBER PREFERRED AS INT64> )",
            "field 'Note.n' would change type from NUMBER to LIST<NUMBER PREFERRED AS INT64>; a deploy may only add")
        try expectRefused(
            from: "RECORD TYPE Note ( n NUMBER )", to: "RECORD TYPE Note ( n INT64 )",
            "field 'Note.n' would change type from NUMBER to INT64; a deploy may only add")
    }

    @Test("the first problem in sorted order is the one reported")
    func firstProblemReported() throws {
        try expectRefused(
            from: "RECORD TYPE B ( x STRING ); RECORD TYPE A ( y STRING, z STRING )", to: "RECORD TYPE A ( )",
            "field 'A.y' would be removed; a deploy may only add")
    }

    @Test("a NUMBER without a preference may gain one")
    func settlingANumberIsAllowed() throws {
        try expectAllowed(from: "RECORD TYPE Note ( n NUMBER )", to: "RECORD TYPE Note ( n NUMBER PREFERRED AS INT64 )")
        try expectAllowed(from: "RECORD TYPE Note ( n NUMBER )", to: "RECORD TYPE Note ( n NUMBER PREFERRED AS DOUBLE )")
        try expectAllowed(
            from: "RECORD TYPE Note ( n LIST<NUMBER> )", to: "RECORD TYPE Note ( n LIST<NUMBER PREFERRED AS DOUBLE> )")
    }

    @Test("adding types, fields and roles is allowed")
    func addingIsAllowed() throws {
        try expectAllowed(from: "", to: "CREATE ROLE Editor; RECORD TYPE Note ( title STRING, GRANT READ TO Editor )")
        try expectAllowed(from: "RECORD TYPE Note ( title STRING )", to: "RECORD TYPE Note ( title STRING, body STRING ); RECORD TYPE Tag ( )")
        try expectAllowed(from: "RECORD TYPE Note ( title STRING )", to: "RECORD TYPE Note ( title STRING )")
    }

    @Test("index options, grants and roles may change freely")
    func indexesGrantsAndRolesMayChange() throws {
        try expectAllowed(
            from: "CREATE ROLE Editor; RECORD TYPE Note ( title STRING QUERYABLE SEARCHABLE, GRANT WRITE TO Editor )",
            to: "CREATE ROLE Reviewer; RECORD TYPE Note ( title STRING SORTABLE, GRANT READ TO Reviewer, GRANT READ TO \"_world\" )")
    }

    @Test("a system field may stop being declared: it still exists, only its indexes go")
    func undeclaringASystemFieldIsAllowed() throws {
        try expectAllowed(
            from: "RECORD TYPE Note ( \"___createTime\" TIMESTAMP SORTABLE, title STRING )", to: "RECORD TYPE Note ( title STRING )")
    }
}
