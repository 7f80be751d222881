import Foundation
import Synchronization
import Testing

@testable import BrsyncServer

/// Writers of a SQLite store take the write lock in the order they came:
/// a small push waits for the writes queued before it, never for every
/// retry a flood of large ones wins.
@Suite struct WriterQueueTests {
    @Test func writersGoInTheOrderTheyCame() throws {
        let queue = WriterQueue()
        let order = Mutex<[String]>([])
        let release = DispatchSemaphore(value: 0)
        // Bounded (a minute at most), not timed: a loaded machine only waits longer.
        func waitUntil(_ count: Int) {
            for _ in 0..<60_000 where queue.queued < count { usleep(1_000) }
            #expect(queue.queued == count)
        }
        let group = DispatchGroup()
        // A thread each (not the global queue, whose threads a loaded
        // machine hands out late): every writer is queued when it says so.
        func writer(_ name: String, holding: Bool = false) {
            group.enter()
            Thread {
                queue.inTurn {
                    order.withLock { $0.append(name) }
                    if holding { release.wait() }
                }
                group.leave()
            }.start()
        }
        writer("first", holding: true)
        waitUntil(1)
        for (index, name) in ["second", "third", "fourth"].enumerated() {
            writer(name)
            waitUntil(index + 2)
        }
        release.signal()
        #expect(group.wait(timeout: .now() + 60) == .success)
        #expect(order.withLock { $0 } == ["first", "second", "third", "fourth"])
        #expect(queue.queued == 0)
    }
}
