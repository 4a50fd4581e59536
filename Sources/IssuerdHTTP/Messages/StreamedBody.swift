import CMicroHTTPD
import Dispatch
import Synchronization

/// A response body written while it is sent, for an export too long to hold or to wait for:
/// the client gets its first bytes as soon as the first rows are read, and memory holds at most
/// ``capacity`` bytes however long the body is.
///
/// The route returns it at once (``HTTPResponse/streamed(_:contentType:)``); the server sends
/// the head, then runs ``produce`` on a handler thread, where it may wait on the database. Its
/// writes go to a bounded buffer, which libmicrohttpd's network thread drains as the socket takes
/// them (chunked transfer coding). A write waits while the buffer is full (the client reads
/// slower than the rows come), and the network thread never waits for the producer: finding the
/// buffer empty it suspends the connection, which the next write resumes.
///
/// A body that fails half way ends without its last chunk, so the client sees an incomplete
/// transfer, never a complete-looking short one. A client that goes away (or a server that
/// stops) makes the next write throw ``Closed``, which ends the producer.
public final class StreamedBody: Sendable {
    /// What a write throws once nobody will read the body: the client went away, or the server
    /// is stopping.
    public struct Closed: Error {}

    /// How the producer ended.
    enum End {
        case finished
        case failed
    }

    private struct State {
        var buffer: [UInt8] = []
        /// Bytes of `buffer` already handed to libmicrohttpd.
        var sent = 0
        var end: End?
        var closed = false
        /// The connection's address, once the server queued the response (an integer: the
        /// pointer itself is not `Sendable`).
        var connection: Int?
        /// Whether the network thread suspended the connection to wait for bytes.
        var suspended = false
        /// Whether the producer waits on `space`.
        var waiting = false
        /// No bound: the body is collected whole (``collect()``).
        var unbounded = false
        var written = 0
    }

    /// Bytes held at most before a write waits.
    public let capacity: Int
    /// Writes the body; runs once.
    let produce: @Sendable (StreamedBody) throws -> Void
    // Guarded by Mutex: the buffer and both sides' waiting states. `connection` is used only
    // while the response exists (until libmicrohttpd frees it, which marks the body closed).
    private let state: Mutex<State>
    private let space = DispatchSemaphore(value: 0)

    /// Creates a body that `produce` writes.
    ///
    /// - Parameters:
    ///   - capacity: Bytes held at most before a write waits.
    ///   - produce: Writes the body with ``write(_:)``; throws to end it as failed.
    public init(capacity: Int = 256 * 1024, produce: @escaping @Sendable (StreamedBody) throws -> Void) {
        self.capacity = max(1, capacity)
        self.produce = produce
        self.state = Mutex(State())
    }

    /// Appends `text` as UTF-8, waiting while the buffer is full.
    ///
    /// - Throws: ``Closed`` once nobody will read the body.
    public func write(_ text: String) throws {
        var bytes = Array(text.utf8)
        guard !bytes.isEmpty else { return }
        while true {
            let (outcome, resume) = state.withLock { state -> (Bool?, OpaquePointer?) in
                if state.closed { return (nil, nil) }
                guard state.unbounded || state.buffer.count - state.sent < capacity else {
                    state.waiting = true
                    return (false, nil)
                }
                if state.sent > 0 {
                    state.buffer.removeFirst(state.sent)
                    state.sent = 0
                }
                state.buffer.append(contentsOf: bytes)
                state.written += bytes.count
                bytes = []
                return (true, wake(&state))
            }
            if let resume { MHD_resume_connection(resume) }
            switch outcome {
            case nil: throw Closed()
            case true?: return
            case false?: space.wait()
            }
        }
    }

    /// Bytes written so far.
    public var written: Int { state.withLock { $0.written } }

    /// Runs the producer to its end on the calling thread, and ends the body accordingly.
    ///
    /// - Returns: How it ended, and the error that failed it (nil when the client went away).
    @discardableResult
    func run() -> (end: End, error: (any Error)?) {
        var outcome: (End, (any Error)?) = (.finished, nil)
        do {
            try produce(self)
        } catch is Closed {
            outcome = (.failed, nil)
        } catch {
            outcome = (.failed, error)
        }
        let resume = state.withLock { state -> OpaquePointer? in
            state.end = outcome.0
            return wake(&state)
        }
        if let resume { MHD_resume_connection(resume) }
        return outcome
    }

    /// The whole body, the producer run on the calling thread without a bound: for the
    /// in-process router, which has no socket to stream to. A failed producer's bytes so far.
    func collect() -> [UInt8] {
        state.withLock { $0.unbounded = true }
        run()
        return state.withLock { Array($0.buffer[$0.sent...]) }
    }

    /// The connection to resume if the network thread suspended it waiting for bytes.
    private func wake(_ state: inout State) -> OpaquePointer? {
        guard state.suspended, let connection = state.connection else { return nil }
        state.suspended = false
        return OpaquePointer(bitPattern: connection)
    }

    /// The server queued the response on `connection`.
    func attach(_ connection: OpaquePointer) {
        let address = Int(bitPattern: UnsafeRawPointer(connection))
        state.withLock { $0.connection = address }
    }

    /// Nobody will read the rest: libmicrohttpd freed the response (the connection ended), or
    /// the server stops (then a suspended connection is resumed, to end with an error).
    func close() {
        let resume = state.withLock { state -> OpaquePointer? in
            state.closed = true
            if state.waiting {
                state.waiting = false
                space.signal()
            }
            return wake(&state)
        }
        if let resume { MHD_resume_connection(resume) }
    }

    /// libmicrohttpd's content reader, on the network thread: copies up to `max` buffered bytes
    /// to `destination`. With none buffered it suspends the connection and returns 0 (called
    /// again once resumed); -1 at the end, -2 after a failure or once closed.
    func read(into destination: UnsafeMutablePointer<CChar>, max: Int) -> Int {
        state.withLock { state in
            if state.closed { return -2 }
            let available = state.buffer.count - state.sent
            if available > 0 {
                let count = min(available, max)
                let start = state.sent
                state.buffer.withUnsafeBytes { bytes in
                    UnsafeMutableRawPointer(destination).copyMemory(from: bytes.baseAddress! + start, byteCount: count)
                }
                state.sent += count
                if state.waiting, state.buffer.count - state.sent < capacity {
                    state.waiting = false
                    space.signal()
                }
                return count
            }
            switch state.end {
            case .finished?: return -1
            case .failed?: return -2
            case nil:
                // Under the lock, so the producer's resume cannot come before this suspend.
                guard let connection = state.connection.flatMap(OpaquePointer.init(bitPattern:)) else { return -2 }
                state.suspended = true
                MHD_suspend_connection(connection)
                return 0
            }
        }
    }
}

/// What a streamed response's libmicrohttpd callbacks reach: its body, and the server to tell
/// when libmicrohttpd frees it.
final class StreamedResponse: Sendable {
    let body: StreamedBody
    let context: ServerContext

    init(body: StreamedBody, context: ServerContext) {
        self.body = body
        self.context = context
    }

    /// libmicrohttpd freed the response: nobody reads the rest.
    func freed() {
        context.streamEnded(body)
        body.close()
    }
}
