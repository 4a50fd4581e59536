// issuerd-sanitizer-probe: does one thing a sanitizer must catch, on purpose, so that a sanitizer
// run that would see nothing (built without the sanitizer, run with a suppression that swallows
// our code, a symbolizer that fails) is itself caught. `scripts/test --sanitize thread` runs
// `race` and expects a ThreadSanitizer report, and `locked` and expects none; `--sanitize address`
// runs `overflow` and `leak` and expects an AddressSanitizer and a LeakSanitizer report. Each runs
// with the suppressions and options of the suites. Never part of issuerd itself.
//
//   issuerd-sanitizer-probe race       # two threads write one Int with no lock: a data race
//   issuerd-sanitizer-probe locked     # the same writes through IssuerdCore's Lock: no report
//   issuerd-sanitizer-probe overflow   # one byte written past a 16-byte heap allocation
//   issuerd-sanitizer-probe leak       # 64 bytes allocated and never freed
import Foundation
import IssuerdCore
import Synchronization

/// Two threads each add 1 to a shared Int `rounds` times, starting together; `add` does the
/// adding. They meet at a relaxed atomic barrier, which orders nothing for ThreadSanitizer, so
/// their writes are unordered unless `add` orders them.
func twoThreads(rounds: Int, _ add: @escaping @Sendable () -> Void) {
    let arrived = Atomic<Int>(0)
    let finished = Atomic<Int>(0)
    for _ in 0..<2 {
        Thread {
            arrived.add(1, ordering: .relaxed)
            while arrived.load(ordering: .relaxed) < 2 {}
            for _ in 0..<rounds { add() }
            finished.add(1, ordering: .relaxed)
        }.start()
    }
    while finished.load(ordering: .relaxed) < 2 { usleep(1_000) }
}

/// A heap Int written without a lock (a plain load and store, which TSan calls a "data race").
// @unchecked Sendable: deliberately not safe; racing on it is the point of the probe.
final class Unguarded: @unchecked Sendable {
    let pointer = UnsafeMutablePointer<Int>.allocate(capacity: 1)
    init() { pointer.initialize(to: 0) }
}

/// Allocates `count` bytes and drops the only pointer to them. In a function of its own: when it
/// returns, its frame lies below the stack pointer, where LeakSanitizer does not look for references.
@inline(never)
func loseBytes(_ count: Int) {
    guard let bytes = malloc(count) else { return }
    memset(bytes, 0xA5, count)
}

let rounds = 100_000
switch CommandLine.arguments.dropFirst().first {
case "race":
    let shared = Unguarded()
    twoThreads(rounds: rounds) { shared.pointer.pointee = shared.pointer.pointee &+ 1 }
    print("race: done (a ThreadSanitizer build reports a data race above)")
case "locked":
    let shared = Lock(0)
    twoThreads(rounds: rounds) { shared.withLock { $0 += 1 } }
    let total = shared.withLock { $0 }
    guard total == 2 * rounds else {
        print("locked: \(total) of \(2 * rounds) increments: the lock lost updates")
        exit(1)
    }
    print("locked: \(total) increments, none lost")
case "overflow":
    let bytes = UnsafeMutablePointer<UInt8>.allocate(capacity: 16)
    bytes.initialize(repeating: 0, count: 16)
    // The index comes from the command line so that no compiler can prove it out of bounds.
    bytes[15 + CommandLine.arguments.count - 1] = 1
    print("overflow: written (an AddressSanitizer build stops at the write above)")
    bytes.deallocate()
case "leak":
    loseBytes(64)
    print("leak: lost 64 bytes (a LeakSanitizer build reports them at exit)")
default:
    print("usage: issuerd-sanitizer-probe race|locked|overflow|leak")
    exit(2)
}
