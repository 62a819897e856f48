import CumulusStorage
import Dispatch
import Foundation
import Synchronization
import Testing

/// Work on a serial thread: run in submission order, one at a time, each on a thread of
/// the worker's own even while every Dispatch thread is held.
@Suite("Serial thread")
struct SerialThreadTests {
    final class Log: Sendable {
        let entries = Mutex<[Int]>([])
        let overlapping = Mutex((now: 0, most: 0))
    }

    @Test("pieces run in the order submitted, never two at once, also when submitted from many tasks at once")
    func order() async throws {
        let worker = SerialThread(name: "test.serial")
        let log = Log()
        let done = DispatchSemaphore(value: 0)
        for index in 0..<200 {
            worker.submit {
                log.overlapping.withLock { $0.now += 1; $0.most = max($0.most, $0.now) }
                log.entries.withLock { $0.append(index) }
                log.overlapping.withLock { $0.now -= 1 }
                if index == 199 { done.signal() }
            }
        }
        done.wait()
        #expect(log.entries.withLock { $0 } == Array(0..<200))
        #expect(log.overlapping.withLock { $0.most } == 1)
    }

    @Test("work runs while Dispatch's threads are all held")
    func independentOfDispatch() {
        let release = DispatchSemaphore(value: 0)
        let held = 64
        for _ in 0..<held { DispatchQueue.global().async { release.wait() } }
        let ran = DispatchSemaphore(value: 0)
        SerialThread(name: "test.serial").submit { ran.signal() }
        let result = ran.wait(timeout: .now() + .seconds(60))
        for _ in 0..<held { release.signal() }
        #expect(result == .success)
    }
}
