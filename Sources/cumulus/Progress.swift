import Foundation

/// Progress for long work: a redrawn bar on a terminal, plain lines otherwise
/// (so logs and CI output stay readable).
final class Progress {
    let label: String
    let total: UInt64
    let isTerminal = isatty(STDERR_FILENO) != 0
    private var lastLine = Date.distantPast

    init(label: String, total: UInt64) {
        self.label = label
        self.total = total
    }

    /// Reports `done` of `total`; throttled to a few updates a second.
    func update(_ done: UInt64) {
        let now = Date()
        guard now.timeIntervalSince(lastLine) >= (isTerminal ? 0.1 : 2) else { return }
        lastLine = now
        let fraction = total == 0 ? 1 : min(Double(done) / Double(total), 1)
        if isTerminal {
            let width = 30
            let filled = Int(fraction * Double(width))
            let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
            FileHandle.standardError.write(Data("\r\(label) \(bar) \(done)/\(total)".utf8))
        } else {
            FileHandle.standardError.write(Data("\(label): \(done)/\(total) (\(Int(fraction * 100))%)\n".utf8))
        }
    }

    /// Ends the bar's line.
    func finish() {
        if isTerminal { FileHandle.standardError.write(Data("\n".utf8)) }
    }
}
