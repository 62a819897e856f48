extension CumulusError {
    /// A refusal of CloudKit Web Services JSON, naming the field (or filter key) it is about.
    static func wire(_ field: String, _ problem: String) -> CumulusError {
        CumulusError(.invalidArguments, "field '\(field)': \(problem)", field: field)
    }
}
