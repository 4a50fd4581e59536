// Shows why issuerd guards shared state with its own Lock (IssuerdCore) and not with
// Synchronization.Mutex: ThreadSanitizer does not see Mutex's futex on Linux. Two threads increment a
// Mutex<Int> 10,000 times each; the total is always 20000 (the lock works), yet TSan reports a
// "Swift access race" on the value in some runs (run it a few times):
//
//   swiftc -sanitize=thread scripts/sanitizers/mutex-tsan-repro.swift -o /tmp/mutex-repro
//   for i in 1 2 3 4 5 6; do /tmp/mutex-repro 2>&1 | grep -c 'WARNING: ThreadSanitizer'; done
//
// Not part of the package (SwiftPM builds only Sources/ and Tests/).
import Foundation
import Synchronization

final class Box: Sendable { let counter = Mutex(0) }
let box = Box()
let threads = (0..<2).map { _ in Thread { for _ in 0..<10_000 { box.counter.withLock { $0 += 1 } } } }
threads.forEach { $0.start() }
while threads.contains(where: { !$0.isFinished }) { Thread.sleep(forTimeInterval: 0.01) }
print(box.counter.withLock { $0 })
