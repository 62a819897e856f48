import Foundation

/// What a figure must reach, as a ratio to its baseline.
enum Target {
    /// Higher is better: the ratio must be at least this.
    case atLeast(Double)
    /// Lower is better (sizes): the ratio must be at most this.
    case atMost(Double)

    func isMet(by ratio: Double) -> Bool {
        switch self {
        case .atLeast(let bound): ratio >= bound
        case .atMost(let bound): ratio <= bound
        }
    }

    var label: String {
        switch self {
        case .atLeast(let bound): "≥ \(Report.format(bound))"
        case .atMost(let bound): "≤ \(Report.format(bound))"
        }
    }
}

/// One measured value and its unit.
struct Figure {
    var value: Double
    var unit: String

    init(_ value: Double, _ unit: String) {
        self.value = value
        self.unit = unit
    }
}

/// Prints figures as aligned lines, each beside the baseline measured in the same run:
///
/// ```
/// name  value unit   baseline  value unit   ratio x.xx  target ≥ y (met/MISSED)
/// ```
///
/// Lines are printed as soon as they are measured (a full run takes minutes, so the
/// reader sees progress); fixed column widths keep them aligned without buffering.
/// The report also remembers every target so the run can end with a summary.
///
/// With `json`, each figure is also printed as one JSON object on a line of its own
/// right after its table line (``FigureRecord``), so `grep '^{'` gives a machine-
/// readable run without a second format to keep in step.
final class Report {
    struct Outcome {
        var name: String
        var ratio: Double
        var target: Target
        var met: Bool
    }

    private(set) var outcomes: [Outcome] = []
    /// Whether figures are also printed as JSON lines.
    let json: Bool
    /// The suite whose figures are being printed (the JSON lines' `suite`).
    var suite = ""
    /// The section being printed (the JSON lines' `section`).
    private var currentSection = ""

    init(json: Bool = false) {
        self.json = json
    }

    static let nameWidth = 40
    static let baselineWidth = 26

    /// Starts a group of lines.
    func section(_ title: String) {
        currentSection = title
        Self.emit("\n== \(title) ==")
    }

    /// A note under the current section (what was run, how).
    func note(_ text: String) {
        Self.emit("   \(text)")
    }

    /// A figure beside its baseline; `target` (if any) is checked against the ratio.
    func compare(_ name: String, _ figure: Figure, baseline: String, _ base: Figure, target: Target? = nil) {
        compare(name, figure, baseline: baseline, base, target: target, sayingNoTarget: false)
    }

    /// A figure beside its baseline where a reader might look for a target and none is
    /// set (a latency beside the leader's own, a rate beside what bounds it): the line
    /// says "target —". Printed and recorded as ``compare(_:_:baseline:_:target:)``
    /// does, so a `--json` run and the tables made from it hold it too.
    func compareWithoutTarget(_ name: String, _ figure: Figure, baseline: String, _ base: Figure) {
        compare(name, figure, baseline: baseline, base, target: nil, sayingNoTarget: true)
    }

    private func compare(
        _ name: String, _ figure: Figure, baseline: String, _ base: Figure, target: Target?, sayingNoTarget: Bool
    ) {
        // Two zeros are equal (a delay of 0 beside a delay of 0), not undefined.
        let ratio = base.value == 0 ? (figure.value == 0 ? 1 : .nan) : figure.value / base.value
        var line = Self.pad(name, Self.nameWidth) + Self.value(figure) + "   "
        line += Self.pad(baseline, Self.baselineWidth) + Self.value(base)
        line += "   ratio " + Self.pad(Self.format(ratio), 6)
        var met: Bool?
        if let target {
            met = target.isMet(by: ratio)
            outcomes.append(Outcome(name: name, ratio: ratio, target: target, met: met == true))
            line += "  target \(target.label) (\(met == true ? "met" : "MISSED"))"
        } else if sayingNoTarget {
            line += "  target —"
        }
        Self.emit(line)
        emitJSON(FigureRecord(
            suite: suite, section: currentSection, figure: name, value: figure.value, unit: figure.unit, baseline: baseline,
            baselineValue: base.value, baselineUnit: base.unit, ratio: ratio, target: target?.label, met: met))
    }

    /// A figure shown for information, without baseline.
    func info(_ name: String, _ figure: Figure) {
        Self.emit(Self.pad(name, Self.nameWidth) + Self.value(figure))
        emitJSON(FigureRecord(
            suite: suite, section: currentSection, figure: name, value: figure.value, unit: figure.unit, baseline: nil,
            baselineValue: nil, baselineUnit: nil,
            ratio: nil, target: nil, met: nil))
    }

    private func emitJSON(_ record: FigureRecord) {
        if json { Self.emit(record.json) }
    }

    /// A line of text in the figure column (breakdowns that are not one number).
    func detail(_ name: String, _ text: String) {
        Self.emit(Self.pad(name, Self.nameWidth) + "  " + text)
    }

    /// Prints how many targets were met.
    func summary() {
        guard !outcomes.isEmpty else { return }
        let missed = outcomes.filter { !$0.met }
        Self.emit("\n\(outcomes.count - missed.count) of \(outcomes.count) targets met")
        for outcome in missed {
            Self.emit("   MISSED: \(outcome.name): ratio \(Self.format(outcome.ratio)), target \(outcome.target.label)")
        }
    }

    // MARK: - Formatting

    /// Three significant-ish digits: enough to compare, few enough to read.
    static func format(_ value: Double) -> String {
        guard value.isFinite else { return "n/a" }
        let magnitude = abs(value)
        if magnitude >= 100 || (value == value.rounded() && magnitude < 1e15) {
            return String(Int64(value.rounded()))
        }
        if magnitude >= 10 { return String(format: "%.1f", value) }
        return String(format: "%.2f", value)
    }

    /// A value right-aligned with its unit left-aligned after it; thousands separated
    /// so rates of hundreds of thousands read at a glance.
    static func value(_ figure: Figure) -> String {
        let text: String
        if abs(figure.value) >= 1000, figure.value.isFinite {
            text = grouped(Int64(figure.value.rounded()))
        } else {
            text = format(figure.value)
        }
        return String(repeating: " ", count: max(0, 11 - text.count)) + text + " " + pad(figure.unit, 10)
    }

    static func grouped(_ number: Int64) -> String {
        let digits = String(number.magnitude)
        var result = ""
        for (index, character) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { result.append(",") }
            result.append(character)
        }
        return number < 0 ? "-" + result : result
    }

    static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
    }

    /// Writes a line straight to standard output, unbuffered, so progress shows
    /// even when the output is piped (e.g. through `tee`).
    static func emit(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}
