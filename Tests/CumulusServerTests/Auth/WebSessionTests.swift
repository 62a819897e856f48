import CumulusModel
@testable import CumulusServer
import Foundation
import Testing

/// How long web auth tokens last (issue 41): idle sessions 30 minutes after their last
/// use, moved on by use (a request, or a GET of a `webcourierURL` made with it); kept
/// sessions two weeks; an operator's token, and every row from before sessions, until
/// revoked.
@Suite("Web sessions")
struct WebSessionTests {
    static let container = APIWorld.containerName

    static func at(_ start: Timestamp, minutes: Int64) -> Timestamp {
        Timestamp(millisecondsSince1970: start.millisecondsSince1970 + minutes * 60_000)
    }

    @Test("an idle session lasts 30 minutes past its last use; use moves it on; a kept one lasts two weeks")
    func sessionsExpire() throws {
        let world = try APIWorld()
        let t0 = Timestamp.now()
        let idle = try world.auth.createWebAuthToken(for: world.alice, container: Self.container, session: .idle, now: t0)
        #expect(try world.auth.user(forWebAuthToken: idle, container: Self.container, now: Self.at(t0, minutes: 29)) == world.alice)
        // The use at 29 minutes moved its end to 59.
        #expect(try world.auth.user(forWebAuthToken: idle, container: Self.container, now: Self.at(t0, minutes: 58), extend: false) == world.alice)
        #expect(try world.auth.user(forWebAuthToken: idle, container: Self.container, now: Self.at(t0, minutes: 60)) == nil)

        let kept = try world.auth.createWebAuthToken(for: world.alice, container: Self.container, session: .kept, now: t0)
        #expect(try world.auth.user(forWebAuthToken: kept, container: Self.container, now: Self.at(t0, minutes: 13 * 24 * 60)) == world.alice)
        #expect(try world.auth.user(forWebAuthToken: kept, container: Self.container, now: Self.at(t0, minutes: 14 * 24 * 60 + 1)) == nil)

        let operatorToken = try world.auth.createWebAuthToken(for: world.alice, container: Self.container, now: t0)
        #expect(try world.auth.user(forWebAuthToken: operatorToken, container: Self.container, now: Self.at(t0, minutes: 365 * 24 * 60)) == world.alice)
    }

    @Test("a follower only checks: without extend, use does not move an idle session on")
    func followersDoNotExtend() throws {
        let world = try APIWorld()
        let t0 = Timestamp.now()
        let idle = try world.auth.createWebAuthToken(for: world.alice, container: Self.container, session: .idle, now: t0)
        #expect(try world.auth.user(forWebAuthToken: idle, container: Self.container, now: Self.at(t0, minutes: 20), extend: false) == world.alice)
        #expect(try world.auth.user(forWebAuthToken: idle, container: Self.container, now: Self.at(t0, minutes: 31), extend: false) == nil)
    }

    @Test("a webcourierURL's GET is a use of its session: it keeps an idle session alive, and dies with it")
    func courierUseKeepsTheSession() throws {
        let world = try APIWorld()
        let t0 = Timestamp.now()
        let idle = try world.auth.createWebAuthToken(for: world.alice, container: Self.container, session: .idle, now: t0)
        let digest = AuthStore.digest(of: idle)
        #expect(try world.auth.webAuthTokenIsLive(digest: digest, user: world.alice, container: Self.container, now: Self.at(t0, minutes: 25), extend: true))
        #expect(try world.auth.webAuthTokenIsLive(digest: digest, user: world.alice, container: Self.container, now: Self.at(t0, minutes: 50)))
        #expect(try !world.auth.webAuthTokenIsLive(digest: digest, user: world.bob, container: Self.container, now: Self.at(t0, minutes: 50)))
        #expect(try !world.auth.webAuthTokenIsLive(digest: digest, user: world.alice, container: Self.container, now: Self.at(t0, minutes: 56)))
    }

    @Test("a row from before sessions (container and user alone) reads as lasting until revoked; a damaged tail signs in no one")
    func oldRowsStillRead() {
        let old = WebTokenRow(Array("iCloud.x".utf8) + [0] + Array("_alice".utf8))
        #expect(old == WebTokenRow(container: "iCloud.x", user: "_alice", session: .unlimited, expires: nil))
        let row = WebTokenRow(container: "iCloud.x", user: "_alice", session: .kept, expires: Timestamp(millisecondsSince1970: 1_000))
        #expect(WebTokenRow(row.encoded) == row)
        #expect(WebTokenRow(Array(row.encoded.dropLast())) == nil)
    }
}
