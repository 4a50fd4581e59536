/// The pool's bookkeeping as a pure state machine: it decides, the pool performs.
///
/// Kept free of locks, clocks and sockets so that every transition is testable on its own
/// (the shape postgres-nio uses for its pool). `Connection` is generic for those tests.
struct PoolState<Connection> {
    /// What the caller of ``acquire()`` must do next.
    enum AcquireAction {
        /// Hand out this idle connection (after checking it is still healthy).
        case use(Connection)
        /// A slot is reserved: open a new connection, then keep it, or report ``openFailed()``.
        case open
        /// Every slot is busy: wait for a release.
        case wait
        /// The pool was closed.
        case closed
    }

    let capacity: Int
    private(set) var idle: [Connection] = []
    /// Connections handed out plus slots reserved for connections being opened.
    private(set) var leased = 0
    private(set) var isClosed = false
    /// Callers currently blocked in ``AcquireAction/wait``; maintained by the pool.
    var waiters = 0

    init(capacity: Int) { self.capacity = max(1, capacity) }

    /// Takes the most recently used idle connection (warm caches), or reserves a slot.
    mutating func acquire() -> AcquireAction {
        if isClosed { return .closed }
        if let connection = idle.popLast() {
            leased += 1
            return .use(connection)
        }
        if leased + idle.count < capacity {
            leased += 1
            return .open
        }
        return .wait
    }

    /// Frees a slot whose connection could not be opened or turned out to be dead.
    mutating func openFailed() { leased -= 1 }

    /// Returns a leased connection; nil when it was discarded.
    ///
    /// - Returns: A connection the pool no longer wants (it was closed meanwhile), to be
    ///   finished outside the lock.
    mutating func release(_ connection: Connection?) -> Connection? {
        leased -= 1
        guard let connection else { return nil }
        if isClosed { return connection }
        idle.append(connection)
        return nil
    }

    /// Marks the pool closed and hands back the idle connections to finish.
    mutating func close() -> [Connection] {
        isClosed = true
        defer { idle.removeAll() }
        return idle
    }
}
