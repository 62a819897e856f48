import Synchronization

/// A JSON text and its tape: where each value lies in the text, written by one pass
/// of ``JSONParser`` and read in place.
///
/// A request body is parsed into one of these, and a route reads the members it
/// needs straight from the body's bytes: a `records/lookup` of 100 names makes 100
/// strings, not 100 dictionaries of one member each. A route that wants values, or
/// a part of the body that a wire decoder takes as ``JSONValue``, builds them from
/// the tape with ``Node/json()``, within the document's memory limit.
///
/// Memory: the tape (12 bytes a value, sized before it is written), the nodes of the
/// arrays read (``Node/arrayValue``) and the values built from the document share its
/// `memoryLimit`, however many parts of it are built and by how many calls.
///
/// Lifetime: a document owns its bytes (an array, shared, not copied), and its
/// ``Node``s hold the document; a ``Node`` stays valid as long as it is held.
public final class JSONDocument: Sendable {
    /// What a tape entry is.
    enum Kind: UInt8, Sendable {
        case null, `true`, `false`, number, string, escapedString, array, object
    }

    /// One value on the tape. For a scalar, `a..<b` is its text (a string's between
    /// its quotes). For an array or object, `a` is how many elements or members it
    /// has and `b` the index of the first entry after its last; its elements follow
    /// it in order, an object's each as a key's entry and then the value's.
    struct Entry: Sendable {
        var kind: Kind
        var a: UInt32
        var b: UInt32
    }

    /// The text.
    let bytes: [UInt8]
    /// Its values in document order, the first the root.
    let tape: [Entry]
    /// The most that the tape and the values built from the document may take
    /// (``Cost``), and what they took so far.
    let memoryLimit: Int
    private let spent = Atomic<Int>(0)

    /// Parses `bytes`, which must hold one JSON value: malformed text is
    /// `invalidArguments` with where it went wrong. Values built from it may take
    /// `memoryLimit` bytes in all (``Node/json()``).
    public init(parsing bytes: [UInt8], memoryLimit: Int = .max) throws {
        self.bytes = bytes
        self.memoryLimit = memoryLimit
        let capacity = bytes.withUnsafeBytes { JSONParser.entryBound($0) }
        // The tape is the first thing the limit pays for: a body that cannot afford
        // it is refused before it is read.
        let tapeBytes = MemoryLayout<Entry>.stride * capacity
        guard tapeBytes <= memoryLimit else { throw Self.overLimit(memoryLimit, built: 0) }
        tape = try bytes.withUnsafeBytes { try JSONParser.tape($0, capacity: capacity) }
        spent.store(tapeBytes, ordering: .relaxed)
    }

    /// Counts `bytes` more of values built against ``memoryLimit``.
    func spend(_ bytes: Int, built: Int) throws(CumulusError) {
        guard spent.add(bytes, ordering: .relaxed).newValue <= memoryLimit else {
            throw Self.overLimit(memoryLimit, built: built)
        }
    }

    private static func overLimit(_ memoryLimit: Int, built: Int) -> CumulusError {
        CumulusError(
            .limitExceeded,
            "this body's JSON would take more than \(memoryLimit) bytes in memory once parsed "
                + "(stopped after \(built) values): send fewer values per request")
    }

    /// The document's value.
    public var root: Node { Node(document: self, index: 0) }

    /// What building ``JSONValue``s costs in memory, roughly and on the high side
    /// (measured: a body of `[1]` elements took about 85 bytes per element,
    /// estimated 128). ``Node/json()`` counts it as it builds.
    enum Cost {
        /// Any value: its slot in an array or a dictionary, with the slack they keep.
        static let value = 32
        /// An array or object: its own allocation.
        static let container = 64
        /// An object's member besides its value: the key and its hash-table slot.
        static let member = 48
        /// A string longer than Swift keeps inline: its allocation besides its bytes.
        static let heapString = 32
    }

    /// One value of a document, read in place.
    public struct Node: Sendable {
        let document: JSONDocument
        let index: Int

        var entry: Entry { document.tape[index] }

        /// The index of the entry after this value and everything inside it.
        var end: Int {
            let entry = entry
            return entry.kind == .array || entry.kind == .object ? Int(entry.b) : index + 1
        }

        /// The text of a scalar.
        func withText<T>(_ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
            let entry = entry
            return try document.bytes.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[Int(entry.a)..<Int(entry.b)])) }
        }

        /// The member `key` of an object (the first, if the text repeats it); `nil` for
        /// a missing key or a non-object.
        public subscript(key: String) -> Node? {
            guard entry.kind == .object else { return nil }
            var wanted = key
            return wanted.withUTF8 { wantedBytes -> Node? in
                let wanted = UnsafeRawBufferPointer(wantedBytes)
                var at = index + 1
                for _ in 0..<Int(entry.a) {
                    let keyNode = Node(document: document, index: at)
                    let value = Node(document: document, index: at + 1)
                    if keyNode.textEquals(wanted) { return value }
                    at = value.end
                }
                return nil
            }
        }

        /// Whether this string's text is `wanted`.
        func textEquals(_ wanted: UnsafeRawBufferPointer) -> Bool {
            switch entry.kind {
            case .string: return withText { $0.elementsEqual(wanted) }
            case .escapedString: return unescaped().elementsEqual(wanted)
            default: return false
            }
        }

        /// An escaped string's text, decoded.
        func unescaped() -> [UInt8] {
            let entry = entry
            return document.bytes.withUnsafeBytes { JSONParser.unescape($0, Int(entry.a)..<Int(entry.b)) }
        }

        /// The text, if this is a string.
        public var stringValue: String? {
            switch entry.kind {
            // The parser checked the bytes are UTF-8.
            case .string: return withText { String(decoding: $0, as: UTF8.self) }
            case .escapedString: return String(decoding: unescaped(), as: UTF8.self)
            default: return nil
            }
        }

        /// The truth value, if this is a boolean.
        public var boolValue: Bool? {
            switch entry.kind {
            case .true: true
            case .false: false
            default: nil
            }
        }

        /// Whether this is `null`.
        public var isNull: Bool { entry.kind == .null }

        /// The number, as ``JSONValue`` holds it, if this is one.
        var number: JSONValue? {
            guard entry.kind == .number else { return nil }
            return withText { JSONParser.number($0) }
        }

        /// The number as an `Int64`, if it is one exactly (an integral double in range counts).
        public var int64Value: Int64? { number?.int64Value }

        /// The number as a `Double` (integers converted), if this is a number.
        public var doubleValue: Double? { number?.doubleValue }

        /// The elements, if this is an array. The nodes count against the document's
        /// memory limit as values built from it do: a body of two million elements
        /// would otherwise make 32 MB of them before anything could count the elements.
        public var arrayValue: [Node]? {
            get throws {
                guard entry.kind == .array else { return nil }
                try document.spend(MemoryLayout<Node>.stride * Int(entry.a), built: 0)
                return elements
            }
        }

        private var elements: [Node] {
            var nodes: [Node] = []
            nodes.reserveCapacity(Int(entry.a))
            var at = index + 1
            for _ in 0..<Int(entry.a) {
                let node = Node(document: document, index: at)
                nodes.append(node)
                at = node.end
            }
            return nodes
        }

        /// Whether this is an object.
        public var isObject: Bool { entry.kind == .object }

        /// What kind of JSON value this is, for error messages.
        public var kindName: String {
            switch entry.kind {
            case .null: "null"
            case .true, .false: "a boolean"
            case .number: "a number"
            case .string, .escapedString: "a string"
            case .array: "an array"
            case .object: "an object"
            }
        }

        /// The value as a ``JSONValue``, built within what is left of the document's
        /// memory limit (estimated as ``Cost`` says): past it, `limitExceeded` before it
        /// is all built.
        public func json() throws(CumulusError) -> JSONValue {
            var builder = Builder(document: document)
            return try builder.value(at: index).value
        }
    }

    /// Builds ``JSONValue``s from the tape, counting what they cost.
    struct Builder {
        let document: JSONDocument
        var built = 0

        func spend(_ bytes: Int) throws(CumulusError) { try document.spend(bytes, built: built) }

        /// The value at tape index `index`, and the index after it.
        mutating func value(at index: Int) throws(CumulusError) -> (value: JSONValue, end: Int) {
            let node = Node(document: document, index: index)
            try spend(Cost.value)
            built += 1
            switch node.entry.kind {
            case .null: return (.null, index + 1)
            case .true: return (.bool(true), index + 1)
            case .false: return (.bool(false), index + 1)
            case .number: return (node.number ?? .null, index + 1)
            case .string, .escapedString: return (.string(try string(node)), index + 1)
            case .array:
                try spend(Cost.container)
                var elements: [JSONValue] = []
                elements.reserveCapacity(Int(node.entry.a))
                var at = index + 1
                for _ in 0..<Int(node.entry.a) {
                    let (element, next) = try value(at: at)
                    elements.append(element)
                    at = next
                }
                return (.array(elements), at)
            case .object:
                try spend(Cost.container)
                var members: [String: JSONValue] = [:]
                var at = index + 1
                for _ in 0..<Int(node.entry.a) {
                    let key = try string(Node(document: document, index: at))
                    try spend(Cost.member)
                    let (member, next) = try value(at: at + 1)
                    if members[key] == nil { members[key] = member }
                    at = next
                }
                return (.object(members), at)
            }
        }

        mutating func string(_ node: Node) throws(CumulusError) -> String {
            let text = node.stringValue ?? ""
            if text.utf8.count > 15 { try spend(Cost.heapString + text.utf8.count) }
            return text
        }
    }
}
