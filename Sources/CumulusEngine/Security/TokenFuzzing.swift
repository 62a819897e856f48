import CumulusModel

/// The parsers of the opaque things clients send back (change tokens, notification
/// tokens, query cursors), reachable by the fuzzer (`Tools/Fuzz`).
///
/// A client can only reach a parser with bytes this server sealed, so a fuzzer
/// feeding raw bytes would stop at the MAC (or the cursor's cipher) every time. Each entry seals the body
/// under a fixed secret first and opens the sealed token as the routes do, so the
/// fuzzer explores what comes after the MAC: the one place a bug in the server's
/// own encoding (or a leaked secret) would let bad bytes in.
@_spi(Fuzzing) public enum TokenFuzzing {
    /// What one body did.
    public enum Outcome: Sendable, Equatable {
        /// Opened, and the contents sealed again opened to the same contents.
        case accepted
        /// Refused with this error code (the one a route would answer).
        case refused(CumulusError.Code)
        /// A property the parser must keep was broken: a fuzzing finding.
        case broken(String)
    }

    static let secret = [UInt8](repeating: 0x5A, count: 32)
    static let logID = [UInt8](repeating: 0x11, count: 16)
    static let cursorDatabase = DatabaseID(
        container: "iCloud.com.example.todo", environment: .development, scope: .private, owner: "_fuzz")

    /// Opens `body` sealed, as a zone token and as a database token: accepted if
    /// either kind opens.
    public static func changeToken(body: [UInt8]) -> Outcome {
        let token = ChangeToken(bytes: TokenSeal.seal(body, secret: secret))
        var outcome = Outcome.refused(.changeTokenExpired)
        for kind in [ChangeToken.Kind.zone, .database] {
            switch check("a \(kind) token", refusedWith: .changeTokenExpired, {
                let contents = try token.open(secret: secret, expecting: kind)
                let again = try ChangeToken.make(contents, secret: secret).open(secret: secret, expecting: kind)
                return again == contents ? nil : "reopened to other contents"
            }) {
            case .broken(let what): return .broken(what)
            case .accepted: outcome = .accepted
            case .refused: break
            }
        }
        return outcome
    }

    /// Opens `body` sealed as a notification token of user `"_fuzz"`.
    public static func notificationToken(body: [UInt8]) -> Outcome {
        let user = "_fuzz"
        return check("a notification token", refusedWith: .changeTokenExpired) {
            let opened = try NotificationToken(bytes: TokenSeal.seal(body, secret: secret))
                .open(secret: secret, logID: logID, user: user)
            let again = try NotificationToken.make(
                logID: logID, epoch: opened.epoch, user: user, sequence: opened.sequence, secret: secret
            ).open(secret: secret, logID: logID, user: user)
            return again == opened ? nil : "reopened at another place"
        }
    }

    /// Opens `body` sealed as a query cursor of user `"_fuzz"` in ``cursorDatabase``.
    public static func queryCursor(body: [UInt8]) -> Outcome {
        let user = "_fuzz"
        return check("a cursor", refusedWith: .invalidArguments) {
            let contents = try QueryCursor.sealed(body, secret: secret, database: cursorDatabase, actor: user)
                .open(secret: secret, database: cursorDatabase, actor: user)
            let again = try QueryCursor.make(contents, secret: secret, actor: user)
                .open(secret: secret, database: cursorDatabase, actor: user)
            let same = again.database == contents.database && again.zoneID == contents.zoneID
                && again.query == contents.query && again.position == contents.position
            return same ? nil : "reopened to other contents"
        }
    }

    /// Runs one open-and-reopen: `body` returns what went wrong, if anything. A
    /// refusal must carry `expected`, the code the routes answer with.
    private static func check(_ what: String, refusedWith expected: CumulusError.Code, _ body: () throws -> String?) -> Outcome {
        do {
            return try body().map { .broken("\(what) \($0)") } ?? .accepted
        } catch let error as CumulusError {
            return error.code == expected ? .refused(expected) : .broken("\(what) was refused with \(error.code), not \(expected)")
        } catch {
            return .broken("\(what) threw \(type(of: error)): \(error)")
        }
    }

    /// Bodies of valid tokens and cursors, to seed the fuzzer's corpus.
    public static func seeds() throws -> (change: [[UInt8]], notification: [[UInt8]], cursor: [[UInt8]]) {
        let database = DatabaseID(container: "iCloud.com.example.todo", environment: .development, scope: .private, owner: "_u1")
        let zone = ZoneID(zoneName: "Lists", ownerName: "_u1")
        func body(_ sealed: [UInt8]) -> [UInt8] { Array(sealed.dropLast(TokenSeal.macLength)) }
        let zoneToken = ChangeToken.make(
            .init(kind: .zone, logID: logID, epoch: 1, database: database, zoneID: zone, incarnation: 1, position: 42, offset: 3),
            secret: secret)
        let databaseToken = ChangeToken.make(
            .init(kind: .database, logID: logID, epoch: 2, database: database, zoneID: nil, incarnation: 0, position: 7, offset: 0),
            secret: secret)
        let notification = NotificationToken.make(logID: logID, epoch: 1, user: "_fuzz", sequence: 99, secret: secret)
        let query = try PredicateParser.query(
            recordType: "TodoItem", predicate: "priority >= 2 AND title BEGINSWITH 'a' AND self CONTAINS 'milk'",
            sort: [QuerySort(key: .field("dueDate"), ascending: false)])
        let cursor = try QueryCursor.body(.init(database: database, zoneID: zone, query: query, position: [1, 2, 3]))
        let zoneWide = try QueryCursor.body(.init(database: database, zoneID: nil, query: Query(recordType: "T"), position: []))
        return (
            [body(zoneToken.bytes), body(databaseToken.bytes)], [body(notification.bytes)],
            [cursor, zoneWide])
    }
}
