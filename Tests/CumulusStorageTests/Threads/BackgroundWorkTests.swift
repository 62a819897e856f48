import Dispatch
import Synchronization
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

    @Test("a pipeline consumes its steps in order, and a failing step ends it only after the step started next has finished")
    func pipelineOrderAndFailure() throws {
        let finished = Mutex<[Int]>([])
        func step(_ index: Int) -> BackgroundWork<Int>? {
            guard index < 5 else { return nil }
            return BackgroundWork {
                finished.withLock { $0.append(index) }
                return index
            }
        }
        var consumed: [Int] = []
        try BackgroundWork.pipeline(first: step(0), next: { step($0 + 1) }) { consumed.append($0) }
        #expect(consumed == [0, 1, 2, 3, 4])

        finished.withLock { $0 = [] }
        #expect(throws: Failure()) {
            try BackgroundWork.pipeline(first: step(0), next: { step($0 + 1) }) { index in
                if index == 2 { throw Failure() }
            }
        }
        // Step 3 was started before step 2 failed, and had finished when the pipeline returned.
        #expect(finished.withLock { $0 } == [0, 1, 2, 3])
    }

    @Test("what the work throws, its value rethrows")
    func rethrowsWhatItThrew() {
        let work = BackgroundWork { () throws -> Int in throw Failure() }
        #expect(throws: Failure()) { try work.value() }
    }
}
