import Foundation
import Testing

@testable import IssuerdCore

@Suite struct ThreadLocalTests {
    private struct Failure: Error {}

    @Test func aValueLastsForItsCallAndNestedCallsRestoreTheOuterOne() throws {
        let slot = ThreadLocal<String>()
        #expect(slot.value == nil)
        slot.withValue("outer") {
            #expect(slot.value == "outer")
            slot.withValue("inner") { #expect(slot.value == "inner") }
            #expect(slot.value == "outer")
            // A call that throws puts the outer value back too.
            #expect(throws: Failure.self) { try slot.withValue("thrown") { throw Failure() } }
            #expect(slot.value == "outer")
        }
        #expect(slot.value == nil)
    }

    @Test func eachThreadSeesOnlyItsOwnValue() {
        let slot = ThreadLocal<Int>()
        let seen = Lock([Int: Int?]())
        DispatchQueue.concurrentPerform(iterations: 8) { index in
            slot.withValue(index) {
                usleep(1_000)
                seen.withLock { $0[index] = slot.value }
            }
        }
        #expect(seen.withLock { $0 } == Dictionary(uniqueKeysWithValues: (0..<8).map { ($0, Optional($0)) }))
        // Another thread, outside any call: nothing.
        let other = Lock<Int??>(nil)
        let thread = Thread { other.withLock { $0 = .some(slot.value) } }
        thread.start()
        while other.withLock({ $0 }) == nil { usleep(1_000) }
        #expect(other.withLock { $0 } == .some(nil))
    }

    @Test func aValueIsReleasedWhenItsCallEnds() {
        final class Tracked {}
        let slot = ThreadLocal<Tracked>()
        weak var released: Tracked?
        do {
            let tracked = Tracked()
            released = tracked
            slot.withValue(tracked) { #expect(slot.value === tracked) }
        }
        #expect(released == nil)
    }
}
