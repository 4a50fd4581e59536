import Foundation
import IssuerdCore
import Testing

@Suite("Lock")
struct LockTests {
    private struct Tally {
        var count = 0
        var order: [Int] = []
    }

    /// Under `scripts/test --sanitize thread` this is also the proof that ThreadSanitizer sees the
    /// lock: four threads read and write the same struct, ordered only by the lock, and the run
    /// fails on any report (with `Synchronization.Mutex` in its place, TSan reports races here).
    @Test("Threads changing one value under the lock lose no change")
    func noLostUpdates() {
        let tally = Lock(Tally())
        let threads = 4
        let rounds = 5_000
        let done = DispatchGroup()
        for thread in 0..<threads {
            done.enter()
            Thread {
                for round in 0..<rounds {
                    tally.withLock { tally in
                        tally.count += 1
                        tally.order.append(thread * rounds + round)
                    }
                }
                done.leave()
            }.start()
        }
        done.wait()
        let (count, order) = tally.withLock { ($0.count, $0.order) }
        #expect(count == threads * rounds)
        #expect(Set(order).count == threads * rounds)
    }

    private struct Refused: Error {}

    @Test("A body that throws leaves the lock released and the value as it changed it")
    func throwingBody() throws {
        let value = Lock(1)
        #expect(throws: Refused.self) {
            try value.withLock { (number: inout Int) throws(Refused) in
                number = 2
                throw Refused()
            }
        }
        // A lock still held would make this wait forever (a default mutex is not recursive).
        #expect(value.withLock { $0 } == 2)
    }

    @Test("The body's result is returned")
    func result() {
        let names = Lock(["a"])
        let count = names.withLock { names in
            names.append("b")
            return names.count
        }
        #expect(count == 2)
    }
}
