import Foundation

/// Progress for long work (replay, rebuild, verify, export, catch-up): a redrawn bar
/// with rate and time left on a terminal, plain lines otherwise (so logs and CI
/// output stay readable). Always on standard error, so it never mixes with output
/// piped from standard output.
final class Progress {
    let label: String
    /// What `done` counts up to; 0 if not known.
    let total: UInt64
    let unit: String
    let isTerminal = isatty(STDERR_FILENO) != 0
    private let started: Date
    private var lastLine: Date
    private var last: UInt64 = 0

    init(label: String, total: UInt64, unit: String = "") {
        self.label = label
        self.total = total
        self.unit = unit
        started = Date()
        // Plain lines start after the first interval, so short jobs print none.
        lastLine = isatty(STDERR_FILENO) != 0 ? .distantPast : started
    }

    /// Reports `done` of `total`; throttled to a few updates a second on a terminal,
    /// one line every two seconds otherwise.
    func update(_ done: UInt64) {
        last = done
        let now = Date()
        guard now.timeIntervalSince(lastLine) >= (isTerminal ? 0.1 : 2) else { return }
        lastLine = now
        draw(done, now: now)
    }

    private func draw(_ done: UInt64, now: Date) {
        let fraction = total == 0 ? 1 : min(Double(done) / Double(total), 1)
        let elapsed = max(now.timeIntervalSince(started), 1e-3)
        let rate = Double(done) / elapsed
        let remaining = rate > 0 && total > done ? Double(total - done) / rate : 0
        let suffix = unit.isEmpty ? "" : " " + unit
        guard total > 0 else {
            // An unknown total (a snapshot sent while it is written): no bar, no end.
            let line = "\(label): \(done)\(suffix)  \(Int(rate))/s"
            FileHandle.standardError.write(Data((isTerminal ? "\r\(line)\u{1B}[K" : line + "\n").utf8))
            return
        }
        let figures = "\(done)/\(total)\(suffix)  \(Int(rate))/s  \(Self.duration(remaining)) left"
        if isTerminal {
            let width = 30
            let filled = Int(fraction * Double(width))
            let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
            FileHandle.standardError.write(Data("\r\(label) \(bar) \(figures)\u{1B}[K".utf8))
        } else {
            FileHandle.standardError.write(Data("\(label): \(Int(fraction * 100))%  \(figures)\n".utf8))
        }
    }

    /// Draws the final state and ends the bar's line.
    func finish() {
        let elapsed = Date().timeIntervalSince(started)
        if isTerminal {
            draw(last, now: Date())
            FileHandle.standardError.write(Data("\n".utf8))
        } else if elapsed >= 2 {
            FileHandle.standardError.write(Data("\(label): done, \(last)\(unit.isEmpty ? "" : " " + unit) in \(Self.duration(elapsed))\n".utf8))
        }
    }

    static func duration(_ seconds: Double) -> String {
        let whole = Int(seconds.rounded())
        return whole >= 60 ? "\(whole / 60)m\(whole % 60)s" : "\(whole)s"
    }
}
