import Foundation

/// A value behind a `pthread_mutex_t`, reached only inside ``withLock(_:)``.
///
/// The lock for shared state everywhere in issuerd, in place of `Synchronization.Mutex`: on Linux
/// `Mutex` waits on a futex inside the uninstrumented libswiftSynchronization, so ThreadSanitizer
/// never sees it taken or released and reports the accesses it orders as races. A
/// `pthread_mutex_t` goes through ThreadSanitizer's interceptors, so the order is seen and a
/// race the lock does not cover is still reported (`LockTests` and `issuerd-sanitizer-probe`).
///
/// A class, so that the mutex has one address for its whole life (POSIX forbids moving or copying
/// a `pthread_mutex_t`): it is allocated once with `UnsafeMutablePointer` and never moves. Being
/// a reference, a `Lock` can also be captured by escaping closures, which a `Mutex` cannot.
// @unchecked Sendable: `value`'s memory is read and written only between pthread_mutex_lock and
// pthread_mutex_unlock on `mutex`, which is initialised before and destroyed after any use.
package final class Lock<Value>: @unchecked Sendable {
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    // Behind a pointer, not a stored property: an access is then plain memory that the mutex
    // orders, with neither the runtime's dynamic exclusivity check of a class's stored property
    // (about as costly as the lock itself: docs/performance.md, "Locks") nor ThreadSanitizer's
    // Swift access checks, which saw an empty `()` value share the object's first bytes.
    @usableFromInline let value: UnsafeMutablePointer<Value>

    /// - Parameter value: The value the lock guards from now on.
    package init(_ value: sending Value) {
        self.value = .allocate(capacity: 1)
        self.value.initialize(to: value)
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        let status = pthread_mutex_init(mutex, nil)
        precondition(status == 0, "pthread_mutex_init failed with \(status)")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
        value.deinitialize(count: 1)
        value.deallocate()
    }

    /// Runs `body` with the value while holding the lock; other threads wait.
    ///
    /// - Parameter body: Reads or changes the value; it must not call `withLock` on the same lock
    ///   (a default mutex is not recursive: the thread would wait on itself).
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws, after the lock is released.
    @inlinable
    package func withLock<Result, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E)
        -> sending Result
    {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value.pointee)
    }
}
