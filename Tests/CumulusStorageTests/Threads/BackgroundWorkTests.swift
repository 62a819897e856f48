import Dispatch
import Testing
@testable import CumulusStorage

@Suite("Background work")
struct BackgroundWorkTests {
    struct Failure: Error, Equatable {}

    @Test("the work starts at once on another thread, and its value is handed over once")
    func runsAlongside() throws {
        let go = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        // The body waits for this thread, which waits for the body to start: both
        // can only finish if the body runs on a thread of its own, started at init.
        let work = BackgroundWork { () -> Int in
            started.signal()
            go.wait()
            return 42
        }
        started.wait()
        go.signal()
        #expect(try work.value() == 42)
        #expect(throws: StorageError.self) { try work.value() }
    }

    @Test("what the work throws, its value rethrows")
    func rethrowsWhatItThrew() {
        let work = BackgroundWork { () throws -> Int in throw Failure() }
        #expect(throws: Failure()) { try work.value() }
    }
}
