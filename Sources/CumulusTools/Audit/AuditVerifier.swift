import CumulusLog
import CumulusModel

/// `audit verify`: checks an export line by line and names the first line that
/// does not hold.
///
/// **Against the log** (``verify(path:against:progress:)`` with a store): the
/// expected lines are regenerated from the log with the range and filters the
/// header names, and the file must equal them line for line — every field of every
/// line (including the commit's chain hash and its predecessor's, recomputed by
/// the log), nothing missing, nothing extra, nothing out of order.
///
/// **Standalone** (no store) proves less, because a line cannot recompute a
/// SHA-256 chain hash (it covers the whole commit's bytes, which the file does not
/// hold). It checks that the file is internally consistent: sequences never go
/// back; lines of one commit agree on time, user, request ID and both hashes, with
/// event numbers increasing (and consecutive, in an unfiltered export); each commit
/// cites as previous hash the hash of the commit before it in the file whenever
/// that is its direct predecessor; an unfiltered export skips no sequence and
/// starts at 0 bytes for commit 1. So removed, inserted or reordered commits and
/// edited hashes are caught; an edited user, key or record name in a line whose
/// commit has only that line is not — that needs the log.
public enum AuditVerifier {
    /// Verifies the export at `path`, against `store` when given, standalone when
    /// `nil`. Malformed files (no header, bad JSON or CSV, wrong columns) throw
    /// `invalidArguments` naming the line; lines that do not hold are reported.
    /// `progress` gets the number of lines checked.
    public static func verify(path: String, against store: LogStore?, progress: ((UInt64) throws -> Void)? = nil) throws
        -> AuditReport
    {
        var file = try AuditFileReader(path: path)
        if let store {
            return try verify(&file, store, progress)
        }
        return try standalone(&file, progress)
    }

    private static func verify(_ file: inout AuditFileReader, _ store: LogStore, _ progress: ((UInt64) throws -> Void)?)
        throws -> AuditReport
    {
        var report = AuditReport(linesChecked: 0, againstLog: true)
        func fail(_ line: Int, _ problem: String) -> AuditReport {
            report.badLine = line
            report.problem = problem
            return report
        }
        let logID = Hex.encode(store.logID)
        guard file.header.logID == logID else {
            return fail(1, "the export is of log \(file.header.logID), this data directory holds log \(logID)")
        }
        let head = try store.lastSequence()
        guard file.header.filter.through <= head else {
            return fail(1, "the export reaches sequence \(file.header.filter.through), past this log's head (\(head))")
        }
        var expected = ExpectedEntries(store: store, filter: file.header.filter)
        while true {
            let line = try file.peek()
            let entry = try expected.peek()
            guard let line else {
                guard let entry else { return report }
                return fail(
                    file.lastLineNumber + 1,
                    "the file ends, but the log has \(identity(entry)) (and any after it) in this export's range: "
                        + "lines were removed")
            }
            guard let entry else {
                return fail(line.number, "\(line.identity) is not in the log within this export's range and filters: an extra line")
            }
            let fields = EntryFormatter.fields(entry)
            if line.identity == identity(entry) {
                for (index, column) in EntryFormatter.columns.enumerated() where line.fields[index] != fields[index] {
                    return fail(line.number, "\(column) is '\(line.fields[index])', the log says '\(fields[index])'")
                }
                _ = try file.next()
                expected.advance()
                report.linesChecked += 1
                if report.linesChecked % 10_000 == 0 { try progress?(UInt64(report.linesChecked)) }
                continue
            }
            let nextLine = try file.peek(1)
            let nextEntry = try expected.peek(1)
            if let nextLine, let nextEntry, line.identity == identity(nextEntry), nextLine.identity == identity(entry) {
                return fail(
                    line.number,
                    "lines \(line.number) and \(nextLine.number) are out of order: \(nextLine.identity) comes before "
                        + "\(line.identity) in the log")
            }
            if let nextEntry, line.identity == identity(nextEntry) {
                return fail(line.number, "a line is missing before this one: the log has \(identity(entry)) here")
            }
            if let nextLine, nextLine.identity == identity(entry) {
                return fail(line.number, "\(line.identity) does not belong here (the log has \(identity(entry)) next): an extra or moved line")
            }
            return fail(line.number, "expected \(identity(entry)) here, found \(line.identity)")
        }
    }

    private static func identity(_ entry: LogEntry) -> AuditIdentity {
        AuditIdentity(sequence: entry.sequence, event: entry.eventIndex)
    }

    /// Columns every line of one commit shares.
    private static let commitColumns = ["time", "user", "requestID", "commitHash", "previousHash"]

    private static func standalone(_ file: inout AuditFileReader, _ progress: ((UInt64) throws -> Void)?) throws -> AuditReport {
        var report = AuditReport(linesChecked: 0, againstLog: false)
        func fail(_ line: Int, _ problem: String) -> AuditReport {
            report.badLine = line
            report.problem = problem
            return report
        }
        let filter = file.header.filter
        let unfiltered = filter.isUnfiltered
        var previous: AuditLine?
        // The first line of the current commit.
        var commitStart: AuditLine?
        while let line = try file.next() {
            let sequence = line.identity.sequence
            guard sequence >= filter.from, sequence <= filter.through else {
                return fail(line.number, "sequence \(sequence) is outside the export's range \(filter.from)…\(filter.through)")
            }
            if let start = commitStart, let last = previous, start.identity.sequence == sequence {
                for column in commitColumns where line[column] != start[column] {
                    return fail(
                        line.number,
                        "\(column) '\(line[column])' differs from line \(start.number) of the same commit \(sequence)")
                }
                guard line.identity.event > last.identity.event else {
                    return fail(line.number, "event \(line.identity.event) of commit \(sequence) comes after event \(last.identity.event): lines out of order")
                }
                if unfiltered, line.identity.event != last.identity.event + 1 {
                    return fail(line.number, "events \(last.identity.event + 1)…\(line.identity.event - 1) of commit \(sequence) are missing")
                }
            } else {
                if let start = commitStart {
                    let last = start.identity.sequence
                    guard sequence > last else {
                        return fail(line.number, "sequence \(sequence) comes after \(last): lines out of order")
                    }
                    if sequence == last + 1, line["previousHash"] != start["commitHash"] {
                        return fail(
                            line.number,
                            "previous hash \(line["previousHash"]) is not commit \(last)'s hash on line \(start.number): the chain is broken")
                    }
                    if unfiltered, sequence != last + 1 {
                        let gap = sequence - 1 == last + 1 ? "commit \(last + 1) is" : "commits \(last + 1)…\(sequence - 1) are"
                        return fail(line.number, "\(gap) missing")
                    }
                } else if unfiltered, sequence != max(filter.from, 1) {
                    return fail(
                        line.number,
                        "the export starts at commit \(max(filter.from, 1)) but its first line is commit \(sequence): "
                            + "lines missing or out of order")
                }
                if sequence == 1, line["previousHash"] != String(repeating: "0", count: 64) {
                    return fail(line.number, "commit 1 must cite the genesis hash (64 zeros) as its previous hash")
                }
                if unfiltered, line.identity.event != 0 {
                    return fail(line.number, "events 0…\(line.identity.event - 1) of commit \(sequence) are missing")
                }
                commitStart = line
            }
            previous = line
            report.linesChecked += 1
            if report.linesChecked % 10_000 == 0 { try progress?(UInt64(report.linesChecked)) }
        }
        if unfiltered, let start = commitStart, start.identity.sequence != filter.through {
            return fail(file.lastLineNumber + 1, "the export ends at commit \(start.identity.sequence), its header says \(filter.through)")
        }
        return report
    }
}
