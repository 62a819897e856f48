import CumulusLog
import CumulusModel

/// A point in the log named by the operator: a sequence number or a time.
///
/// A time means the last commit whose timestamp is at or before it; a time before
/// the first commit means sequence 0, the empty state before any commit.
public enum PointInTime: Sendable, Hashable, CustomStringConvertible {
    /// Right after commit `n` (0: before the first).
    case sequence(UInt64)
    /// Right after the last commit made at or before this time.
    case time(Timestamp)

    /// Parses `SEQ` (digits) or an ISO-8601 time; anything else is `invalidArguments`.
    public init(parsing text: String) throws {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if !trimmed.isEmpty, trimmed.allSatisfy(\.isASCII), trimmed.allSatisfy(\.isNumber) {
            guard let sequence = UInt64(trimmed) else {
                throw CumulusError(.invalidArguments, "sequence \(trimmed) is out of range")
            }
            self = .sequence(sequence)
        } else if let time = ToolTime.parse(trimmed) {
            self = .time(time)
        } else {
            throw CumulusError(
                .invalidArguments,
                "'\(text)' is neither a sequence number nor an ISO-8601 time (e.g. 42 or 2026-11-22T03:23:14Z)")
        }
    }

    /// The sequence this point names in `store`. A sequence past the head is
    /// `invalidArguments`.
    ///
    /// Times are found by binary search, which relies on commit times not decreasing
    /// along the log: the writer stamps each group as it commits. Should the clock
    /// ever step back, the answer is still a commit at or before the time, though
    /// not necessarily the last. In a log that dropped its oldest commits (retention)
    /// only the retained ones are searched: a time before the first of them is
    /// `invalidArguments`, since which dropped commit it names cannot be known.
    public func resolve(in store: LogStore) throws -> UInt64 {
        let head = try store.lastSequence()
        switch self {
        case .sequence(let sequence):
            guard sequence <= head else {
                throw CumulusError(.invalidArguments, "sequence \(sequence) is past the head of the log (\(head))")
            }
            return sequence
        case .time(let time):
            let base = store.retainedBase.sequence
            var low = base  // a commit at or before `time`, or the last dropped one (0: none)
            var high = head  // candidates are low+1...high
            while low < high {
                let middle = low + (high - low + 1) / 2
                guard let commit = try store.read(middle) else { throw LogError.missing(sequence: middle) }
                if commit.timestamp <= time { low = middle } else { high = middle - 1 }
            }
            guard low > base || base == 0 else {
                throw CumulusError(
                    .invalidArguments,
                    "\(ToolTime.iso(time)) is before commit \(base + 1), the first this log still holds "
                        + "(retention dropped the earlier ones)")
            }
            return low
        }
    }

    /// `#n` or the ISO time.
    public var description: String {
        switch self {
        case .sequence(let sequence): "#\(sequence)"
        case .time(let time): ToolTime.iso(time)
        }
    }
}

