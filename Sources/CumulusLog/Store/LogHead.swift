/// The last commit of a log: its sequence and chain hash. An empty log's head is
/// sequence 0 with the all-zero genesis hash, which the first frame chains from.
public struct LogHead: Sendable, Hashable, CustomStringConvertible {
    /// The hash the first commit chains from.
    public static let genesisHash = [UInt8](repeating: 0, count: Frame.hashLength)
    /// The head of an empty log.
    public static let empty = LogHead(sequence: 0, hash: genesisHash)

    /// Sequence of the last commit (0: none).
    public var sequence: UInt64
    /// Its chain hash.
    public var hash: [UInt8]

    /// A head.
    public init(sequence: UInt64, hash: [UInt8]) {
        self.sequence = sequence
        self.hash = hash
    }

    /// `#sequence hash-prefix`.
    public var description: String {
        "#\(sequence) " + hash.prefix(8).map { String($0, radix: 16).leftPadded(to: 2) }.joined()
    }
}

extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
