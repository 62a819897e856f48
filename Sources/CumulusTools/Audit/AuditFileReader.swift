import CumulusModel

/// Reads an audit export's event lines, with lookahead, after checking its header
/// (and, for CSV, its column row). Constant memory: at most a few lines buffered.
struct AuditFileReader {
    private var reader: LineReader
    /// The export's header.
    let header: AuditHeader
    /// Its format.
    let format: AuditFormat
    private var buffered: [AuditLine] = []
    private var exhausted = false

    init(path: String) throws {
        reader = try LineReader(path: path)
        guard let first = try reader.next() else { throw AuditHeader.malformed("the file is empty") }
        guard let format = AuditHeader.format(of: first) else {
            throw AuditHeader.malformed("line 1 is neither a JSON Lines nor a CSV audit header")
        }
        self.format = format
        header = try AuditHeader(parsing: first)
        if format == .csv {
            guard let columns = try reader.next(), let names = try CSV.parse(columns), names == EntryFormatter.columns else {
                throw AuditHeader.malformed("line 2 is not the column row \(CSV.row(EntryFormatter.columns))")
            }
        }
    }

    /// The number of the last physical line read.
    var lastLineNumber: Int { reader.lineNumber }

    /// The line `offset` ahead of the next one, without consuming it.
    mutating func peek(_ offset: Int = 0) throws -> AuditLine? {
        while buffered.count <= offset, !exhausted {
            if let line = try readLine() { buffered.append(line) } else { exhausted = true }
        }
        return offset < buffered.count ? buffered[offset] : nil
    }

    /// Consumes the next line.
    mutating func next() throws -> AuditLine? {
        let line = try peek()
        if !buffered.isEmpty { buffered.removeFirst() }
        return line
    }

    private mutating func readLine() throws -> AuditLine? {
        guard var text = try reader.next() else { return nil }
        let number = reader.lineNumber
        switch format {
        case .jsonl:
            guard !text.isEmpty else { throw AuditLine.malformed(number, "is empty") }
            return try AuditLine(json: text, number: number)
        case .csv:
            while true {
                if let fields = try CSV.parse(text) { return try AuditLine(fields: fields, number: number) }
                // A quoted field continues on the next line (RFC 4180).
                guard let more = try reader.next() else { throw AuditLine.malformed(number, "ends inside a quoted field") }
                text += "\n" + more
            }
        }
    }
}
