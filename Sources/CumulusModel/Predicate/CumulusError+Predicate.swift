extension CumulusError {
    /// A refusal of a predicate format string. Every one names the construct and the
    /// 0-based Unicode-scalar offset where it starts, so a client can point at it.
    static func predicate(_ construct: String, at position: Int, hint: String? = nil) -> CumulusError {
        var message = "\(construct) at position \(position)"
        if let hint { message += "; \(hint)" }
        return CumulusError(.invalidArguments, message)
    }
}
