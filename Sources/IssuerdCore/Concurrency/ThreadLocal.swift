import Foundation

/// A value per thread, in a POSIX thread-specific slot, set for the length of a call.
///
/// For the state a request's work carries down its thread (its trace, its database scope).
/// Foundation's `Thread.current.threadDictionary` costs about 19,000 instructions a set
/// (an `NSMutableDictionary` keyed by bridged strings); a slot is a few dozen.
package final class ThreadLocal<Value>: @unchecked Sendable {
    // @unchecked Sendable: `key` is written once, in init; each thread reads and writes only its
    // own slot.
    private let key: pthread_key_t

    private final class Box {
        let value: Value
        init(_ value: Value) { self.value = value }
    }

    package init() {
        var key = pthread_key_t()
        // No destructor: ``withValue(_:_:)`` puts the outer value back before it returns, so no
        // thread ends holding one of its boxes.
        let status = pthread_key_create(&key, nil)
        precondition(status == 0, "pthread_key_create failed with \(status)")
        self.key = key
    }

    /// This thread's value, if a ``withValue(_:_:)`` is running on it.
    package var value: Value? {
        guard let raw = pthread_getspecific(key) else { return nil }
        return Unmanaged<Box>.fromOpaque(raw).takeUnretainedValue().value
    }

    /// Runs `body` with `value` as this thread's value, then puts back the one before.
    package func withValue<T>(_ value: Value, _ body: () throws -> T) rethrows -> T {
        let outer = pthread_getspecific(key)
        let box = Unmanaged.passRetained(Box(value))
        pthread_setspecific(key, box.toOpaque())
        defer {
            pthread_setspecific(key, outer)
            box.release()
        }
        return try body()
    }
}
