/// The name of a directory holding state as of one commit (a views snapshot, a
/// time-travel checkpoint): the sequence in decimal, zero-padded to ``width`` digits,
/// so that names sort as their sequences do.
public enum SequenceName {
    /// Digits in a name: enough for every `UInt64`.
    public static let width = 20

    /// The name of `sequence`.
    public static func of(_ sequence: UInt64) -> String {
        String(sequence).leftPadded(to: width)
    }

    /// The sequence `name` names, or `nil` if it is not such a name.
    public static func parse(_ name: String) -> UInt64? {
        guard name.utf8.count == width, name.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            return nil
        }
        return UInt64(name)
    }
}
