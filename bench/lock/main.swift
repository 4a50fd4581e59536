// IssuerdCore's Lock against Synchronization.Mutex and a bare pthread_mutex_t, in one run:
// the cost of one withLock, uncontended on one thread, shared by two threads, and with the lock
// made for one use (as per-request locks are). Median of 7 batches of 5,000,000 after a warm-up.
// Not part of the package (SwiftPM builds only Sources/ and Tests/); built against Lock's source:
//
//   swiftc -O -package-name issuerd -module-name lockbench bench/lock/main.swift \
//       Sources/IssuerdCore/Concurrency/Lock.swift -o /tmp/lockbench && /tmp/lockbench
import Foundation
import Synchronization

let count = 5_000_000

/// Nanoseconds per call of `body`'s loop, the median of 7 timed batches after one untimed.
func nanoseconds(_ label: String, _ body: () -> Void) -> Double {
    body()
    var batches: [Double] = []
    for _ in 0..<7 {
        let start = DispatchTime.now().uptimeNanoseconds
        body()
        batches.append(Double(DispatchTime.now().uptimeNanoseconds - start) / Double(count))
    }
    let median = batches.sorted()[batches.count / 2]
    print(label.padding(toLength: 34, withPad: " ", startingAt: 0) + String(format: "%7.1f ns", median))
    return median
}

/// Runs `body` on two threads at once and waits for both.
func onTwoThreads(_ body: @escaping @Sendable () -> Void) {
    let done = DispatchGroup()
    for _ in 0..<2 {
        done.enter()
        Thread {
            body()
            done.leave()
        }.start()
    }
    done.wait()
}

final class MutexBox: Sendable { let mutex = Mutex(0) }
// @unchecked Sendable: written only by the one thread that runs the loops.
final class Sink: @unchecked Sendable { var total = 0 }

let lock = Lock(0)
let box = MutexBox()
let sink = Sink()
let bare = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
bare.initialize(to: pthread_mutex_t())
pthread_mutex_init(bare, nil)

print("one withLock, \(ProcessInfo.processInfo.activeProcessorCount) cores")
let lockOne = nanoseconds("Lock, one thread") { for _ in 0..<count { lock.withLock { $0 &+= 1 } } }
let mutexOne = nanoseconds("Mutex, one thread") { for _ in 0..<count { box.mutex.withLock { $0 &+= 1 } } }
_ = nanoseconds("bare pthread_mutex_t, one thread") {
    for _ in 0..<count {
        pthread_mutex_lock(bare)
        sink.total &+= 1
        pthread_mutex_unlock(bare)
    }
}
let lockTwo = nanoseconds("Lock, two threads") {
    onTwoThreads { for _ in 0..<(count / 2) { lock.withLock { $0 &+= 1 } } }
}
let mutexTwo = nanoseconds("Mutex, two threads") {
    onTwoThreads { for _ in 0..<(count / 2) { box.mutex.withLock { $0 &+= 1 } } }
}
let lockMade = nanoseconds("Lock, made for one use") {
    for _ in 0..<count {
        let one = Lock(1)
        sink.total &+= one.withLock { $0 }
    }
}
let mutexMade = nanoseconds("Mutex, made for one use") {
    for _ in 0..<count {
        let one = Mutex(1)
        sink.total &+= one.withLock { $0 }
    }
}
print(
    String(
        format: "Lock − Mutex: %.1f ns one thread, %.1f ns two threads, %.1f ns made for one use",
        lockOne - mutexOne, lockTwo - mutexTwo, lockMade - mutexMade))
