import Foundation

/// The text comparisons of CloudKit queries (CLOUDKIT.md §5), in one place so the
/// evaluator and the indexes can never disagree.
public enum TextFolding {
    /// The form string equality and ordering compare: case-insensitive (CloudKit's
    /// string `==` ignores case; everything else is exact).
    public static func caseFolded(_ text: String) -> String {
        text.lowercased()
    }

    /// The form tokens compare in: case- and diacritic-insensitive.
    public static func tokenFolded(_ text: String) -> String {
        text.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil).lowercased()
    }
}
