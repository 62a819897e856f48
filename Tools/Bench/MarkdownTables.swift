import Foundation

/// `cumulus-bench tables RUN…`: the figures of saved runs (what `--json` prints, one
/// ``FigureRecord`` per line among the table lines) as Markdown, one table per suite
/// with a row naming each section before its figures: how `Docs/PERFORMANCE.md`'s tables are made, so they can
/// be made again from the next run instead of edited by hand.
enum MarkdownTables {
    /// The tables of every figure line in `text`, in the order they were printed.
    static func render(_ text: String) throws -> String {
        let decoder = JSONDecoder()
        var records: [FigureRecord] = []
        for line in text.split(separator: "\n") where line.hasPrefix("{") {
            do {
                records.append(try decoder.decode(FigureRecord.self, from: Data(line.utf8)))
            } catch {
                throw BenchFailure("not a figure line of `cumulus-bench --json`: \(line.prefix(120))")
            }
        }
        guard !records.isEmpty else { throw BenchFailure("no figure lines (run cumulus-bench with --json)") }
        var out: [String] = []
        var suite: String?
        var section: String?
        for record in records {
            if record.suite != suite {
                suite = record.suite
                section = nil
                out += [
                    "", "### \(record.suite)", "",
                    "| figure | value | baseline | baseline value | ratio | target |",
                    "|---|--:|---|--:|--:|---|",
                ]
            }
            if record.section != section {
                section = record.section
                // The section as a row of its own, without the suite's name before it.
                let prefix = record.suite + ": "
                let title = record.section.hasPrefix(prefix) ? String(record.section.dropFirst(prefix.count)) : record.section
                out.append("| ***\(escape(title))*** | | | | | |")
            }
            let target = record.target.map { "\($0) (\(record.met == true ? "met" : "**missed**"))" } ?? ""
            out.append(
                "| \(escape(record.figure)) | \(value(record.value, record.unit)) | \(escape(record.baseline ?? "")) | "
                    + "\(record.baselineValue.map { value($0, record.baselineUnit ?? "") } ?? "") | "
                    + "\(record.ratio.map(Report.format) ?? "") | \(target) |")
        }
        return out.joined(separator: "\n") + "\n"
    }

    /// A value as the table lines print it, unit included.
    private static func value(_ number: Double, _ unit: String) -> String {
        let text = abs(number) >= 1000 && number.isFinite ? Report.grouped(Int64(number.rounded())) : Report.format(number)
        return unit.isEmpty ? text : "\(text) \(unit)"
    }

    private static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "|", with: "\\|")
    }
}
