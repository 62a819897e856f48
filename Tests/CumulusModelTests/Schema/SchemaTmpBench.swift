import Testing
@testable import CumulusModel

@Suite struct SchemaTmpBench {
    @Test func bench() throws {
        let text = SchemaFuzzTests.corpus[2]
        let n = 2000
        var clock = ContinuousClock.now
        for _ in 0..<n {
            var lexer = SchemaLexer(text)
            while lexer.next().kind != .end {}
        }
        let lex = ContinuousClock.now - clock
        clock = ContinuousClock.now
        var schema = Schema.empty
        for _ in 0..<n { schema = try SchemaParser.parse(text) }
        let parse = ContinuousClock.now - clock
        clock = ContinuousClock.now
        for _ in 0..<n { _ = SchemaPrinter.print(schema) }
        let print = ContinuousClock.now - clock
        clock = ContinuousClock.now
        for _ in 0..<n { _ = schema.normalized() }
        let norm = ContinuousClock.now - clock
        clock = ContinuousClock.now
        for _ in 0..<n { _ = schema == schema }
        let eq = ContinuousClock.now - clock
        Swift.print("BENCH bytes", text.utf8.count, "lex", lex / n, "parse", parse / n, "print", print / n, "normalized", norm / n, "eq", eq / n)
    }
}
