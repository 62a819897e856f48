import CumulusModel

/// The outcome of a modify operation: one result per item, in the order given.
public struct ModifyResult: Sendable {
    /// Per save: the record as now stored (new change tag and dates), or its error.
    public var saveResults: [(recordID: RecordID, result: Result<Record, CumulusError>)]
    /// Per delete: success or its error.
    public var deleteResults: [(recordID: RecordID, result: Result<Void, CumulusError>)]
    /// The log sequence of the commit, if anything was applied.
    public var sequence: UInt64?

    /// The failed items' errors by record ID.
    public var itemErrors: [RecordID: CumulusError] {
        var errors: [RecordID: CumulusError] = [:]
        for item in saveResults { if case .failure(let error) = item.result { errors[item.recordID] = error } }
        for item in deleteResults { if case .failure(let error) = item.result { errors[item.recordID] = error } }
        return errors
    }

    /// `partialFailure` when any item failed (CloudKit's operation-level error; the
    /// item errors are in ``itemErrors``), `nil` when all succeeded.
    public var partialFailure: CumulusError? {
        let failed = itemErrors.count
        guard failed > 0 else { return nil }
        return CumulusError(
            .partialFailure,
            "\(failed) of \(saveResults.count + deleteResults.count) items failed; see the per-item errors")
    }

    /// The saved records that succeeded, in order.
    public var savedRecords: [Record] {
        saveResults.compactMap { if case .success(let record) = $0.result { record } else { nil } }
    }
}
