import Testing
@testable import CumulusServer

@Suite("Route matching")
struct RouteMatchTests {
    @Test("segments are split at slashes, empty ones dropped, and names beyond ASCII kept whole")
    func segments() {
        let match = Route.match("//database/1/iCloud.com.exämple.日記//development/private/records/modify/")
        #expect(match.route == .recordsModify)
        #expect(match.parts == ["database", "1", "iCloud.com.exämple.日記", "development", "private", "records", "modify"])
        #expect(match.container == "iCloud.com.exämple.日記")
        #expect(match.environment == "development")
        #expect(match.database == "private")
        #expect(!match.viaConsole)
    }

    @Test("each kind of place: a node route, an environment route, a console database route, prefixes, and none")
    func places() {
        #expect(Route.match("/healthz").route == .healthz)
        #expect(Route.match("/database/1/c/development/tokens/create").route == .tokensCreate)
        let console = Route.match("/console/database/1/c/production/public/zones/list")
        #expect(console.route == .zonesList)
        #expect(console.viaConsole)
        #expect(console.container == "c")
        #expect(Route.match("/console/api/metrics").route == .consoleMetrics)
        #expect(Route.match("/console/api/metrics").parts == ["console", "api", "metrics"])
        #expect(Route.match("/console").route == .console && !Route.match("/console").viaConsole)
        #expect(Route.match("/console/api/nothing").route == nil)
        let unknown = Route.match("/console/database/1/c/production/public/nothing")
        #expect(unknown.route == nil && !unknown.viaConsole && unknown.parts.first == "console")
        #expect(Route.match(Route.consoleAssetPath + "console.js").route == .consoleAsset)
        #expect(Route.match("/database/1/c/development/private/records/nope").route == nil)
        #expect(Route.match("").route == nil)
        #expect(Route.match("/").parts.isEmpty)
    }
}
