@_spi(Fuzzing) import CumulusEngine

/// Change tokens, notification tokens and query cursors: the body after the MAC,
/// sealed by `TokenFuzzing` so the fuzzer reaches the parsers (a client's raw bytes
/// stop at the MAC).
enum TokenTarget {
    static func run(_ target: FuzzTarget, _ input: [UInt8]) -> FuzzOutcome {
        let outcome: TokenFuzzing.Outcome
        switch target {
        case .changeToken: outcome = TokenFuzzing.changeToken(body: input)
        case .notificationToken: outcome = TokenFuzzing.notificationToken(body: input)
        default: outcome = TokenFuzzing.queryCursor(body: input)
        }
        switch outcome {
        case .accepted: return .accepted
        case .refused(let code): return .refused("\(code)")
        case .broken(let what): return .broken(what)
        }
    }

    static func seeds(_ target: FuzzTarget) throws -> [[UInt8]] {
        let seeds = try TokenFuzzing.seeds()
        switch target {
        case .changeToken: return seeds.change
        case .notificationToken: return seeds.notification
        default: return seeds.cursor
        }
    }
}
