import CumulusLog
import CumulusModel
import CumulusViews
import Foundation

/// Deletes `firesOnce` subscriptions after they fire, through the log, so replay and
/// followers see the deletion too.
///
/// Firing is recorded inside the commit's transaction (the `subscriptionsFired`
/// view), which already stops a second notification; the deletion is a separate
/// commit appended afterwards, never inside the writer's transaction (a plan cannot
/// append to the commit being applied). Runs once at start — a crash may have
/// come between the two — then after every commit, until cancelled.
enum FiredOnceReaper {
    static func run(store: LogStore, views: Views, writer: LogWriter) async {
        // Each commit names the job and its run, as a request's names the request.
        let job = "fired-once-reaper/" + UUID.random().uuidString.prefix(8).lowercased()
        var deletions = 0
        while !Task.isCancelled {
            let seen = store.head.sequence
            let pending = (try? store.environment.read { try views.firedOnceSubscriptions($0) }) ?? []
            for (database, subscriptionID) in pending where !Task.isCancelled {
                deletions += 1
                let requestID = "\(job)/\(deletions)"
                // The plan checks again: another pass (or a re-save) may have settled it.
                _ = try? await writer.submit { context -> (CommitRequest?, Void) in
                    guard try views.hasFiredOnce(subscriptionID, in: database, context.transaction) else { return (nil, ()) }
                    let event = Event.subscriptionDeleted(database: database, subscriptionID: subscriptionID)
                    return (CommitRequest(actor: "", requestID: requestID, events: [event]), ())
                }
            }
            await store.waitForCommit(after: seen)
        }
    }
}
