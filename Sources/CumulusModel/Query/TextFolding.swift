import Foundation

/// The text comparisons of CloudKit queries (`Docs/DATA-MODEL.md`, "Queries"), in one place so the
/// evaluator and the indexes can never disagree.
public enum TextFolding {
    /// The form string equality and ordering compare: case-insensitive (CloudKit's
    /// string `==` ignores case; everything else is exact).
    public static func caseFolded(_ text: String) -> String {
        if let ascii = asciiLowercased(text) { return ascii }
        return text.lowercased()
    }

    /// The form tokens compare in: case- and diacritic-insensitive.
    public static func tokenFolded(_ text: String) -> String {
        // Most text is ASCII, where folding is lower-casing; Foundation's folding
        // costs microseconds per word and would dominate indexing.
        if let ascii = asciiLowercased(text) { return ascii }
        return text.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil).lowercased()
    }

    /// `text` lower-cased if it is all ASCII, else `nil`.
    static func asciiLowercased(_ text: String) -> String? {
        var needsChange = false
        for byte in text.utf8 {
            if byte >= 0x80 { return nil }
            if byte >= 0x41 && byte <= 0x5A { needsChange = true }
        }
        guard needsChange else { return text }
        return String(decoding: text.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self)
    }
}
