import Foundation

/// How many round trips to the server the calling thread has waited for: each flush of a
/// statement, a pipeline or a pipeline's sync point counts one, whatever connection it went on.
///
/// A thread-local count, so a test can hold a request path to its budget of round trips by
/// running the request on its own thread (the router's in-process exchange), whatever else the
/// process does on other threads meanwhile.
public enum PostgresRoundTrips {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        precondition(pthread_key_create(&key, nil) == 0, "no thread-specific key left for the round-trip count")
        return key
    }()

    /// The round trips this thread has waited for since it started.
    public static var onCurrentThread: Int { Int(bitPattern: pthread_getspecific(key)) }

    /// Counts one round trip on this thread.
    static func count() {
        pthread_setspecific(key, UnsafeRawPointer(bitPattern: onCurrentThread &+ 1))
    }
}
