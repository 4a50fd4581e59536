import Foundation

/// A private PostgreSQL cluster in a temporary folder, reachable only through its own Unix
/// socket, that a test may stop and start at will (the shared test server must never be
/// stopped: other tests run against it in parallel).
///
/// PostgreSQL refuses to run as root, so as root every command runs through
/// `runuser -u postgres` and the folder belongs to that user (platform notes, "PostgreSQL
/// as root"). The binaries come from `ISSUERD_TEST_PG_BIN`, else /usr/lib/postgresql/15/bin.
public final class DisposablePostgresServer: Sendable {
    /// The folder holding `data/`, `sock/` and `server.log`.
    public let directory: URL
    /// A conninfo string for the `postgres` database as the `postgres` superuser.
    public let connectionString: String
    /// Over TCP on 127.0.0.1 (``init(loopbackTCP:)`` with `true`), for what only a TCP session
    /// shows (the server's keepalive settings read 0 over a Unix socket); nil otherwise.
    public let tcpConnectionString: String?
    private let tcpPort: Int?
    private let binDirectory: String
    private let asRoot: Bool
    /// Server settings added at every start (`-c name=value` each).
    private let settings: [String]

    /// The socket file's port number; the socket folder is private, so it never clashes.
    private static let port = 5432

    /// Initialises and starts a new cluster (about a second), or a hot standby of another one.
    ///
    /// - Parameters:
    ///   - loopbackTCP: Also listen on 127.0.0.1, on a port the kernel found free just before
    ///     (another process taking it in that moment fails the start: "could not bind").
    ///   - standbyOf: Instead of an empty cluster, a streaming hot standby of that (running)
    ///     server: cloned with `pg_basebackup -R` over its socket (initdb's trust rules allow
    ///     local replication), then started; it replays what the primary writes from then on.
    ///   - settings: Server settings for every start, e.g. `max_standby_streaming_delay=0`.
    /// - Throws: ``TestEnvironmentError`` with the tail of the server log when a step fails.
    public init(
        loopbackTCP: Bool = false, standbyOf primary: DisposablePostgresServer? = nil, settings: [String] = []
    )
        throws
    {
        self.settings = settings
        let environment = ProcessInfo.processInfo.environment
        binDirectory =
            environment["ISSUERD_TEST_PG_BIN"].flatMap { $0.isEmpty ? nil : $0 } ?? "/usr/lib/postgresql/15/bin"
        asRoot = geteuid() == 0
        let suffix = UUID().uuidString.prefix(8).lowercased()
        directory = URL(fileURLWithPath: "/tmp/issuerd-pg-\(suffix)")
        let tcpPort = loopbackTCP ? try LoopbackPort.free() : nil
        self.tcpPort = tcpPort
        connectionString = "host=\(directory.path)/sock port=\(tcpPort ?? Self.port) user=postgres dbname=postgres"
        tcpConnectionString = tcpPort.map { "host=127.0.0.1 port=\($0) user=postgres dbname=postgres" }

        let data = directory.appendingPathComponent("data")
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(
            at: directory.appendingPathComponent("sock"), withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: data.path)
        if asRoot {
            try Self.run("/bin/chown", ["-R", "postgres:postgres", directory.path], what: "chown")
        }
        if let primary {
            try runAsOwner(
                "pg_basebackup",
                ["-D", data.path, "-d", primary.connectionString, "-R", "-X", "stream", "-c", "fast", "--no-sync"],
                what: "pg_basebackup")
        } else {
            try runAsOwner(
                "initdb",
                ["-D", data.path, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync"],
                what: "initdb")
        }
        try start()
    }

    /// Starts the server and waits until it accepts connections.
    public func start() throws {
        // With TCP the socket file is named after the TCP port (one port for both).
        let listen =
            tcpPort.map { "-p \($0) -c listen_addresses=127.0.0.1" } ?? "-p \(Self.port) -c listen_addresses=''"
        let options =
            "-k \(directory.path)/sock \(listen) -c fsync=off -c max_connections=50"
            + settings.map { " -c \($0)" }.joined()
        try runAsOwner(
            "pg_ctl",
            [
                "-D", directory.appendingPathComponent("data").path, "-l",
                directory.appendingPathComponent("server.log").path,
                "-w", "-t", "30", "-o", options, "start",
            ],
            what: "pg_ctl start")
    }

    /// Stops the server with a fast shutdown: open sessions are terminated, as in an outage.
    public func stop() throws {
        try runAsOwner(
            "pg_ctl", ["-D", directory.appendingPathComponent("data").path, "-m", "fast", "-w", "stop"],
            what: "pg_ctl stop")
    }

    /// Stops the server if it runs and deletes the folder.
    public func destroy() {
        try? stop()
        try? FileManager.default.removeItem(at: directory)
    }

    private func runAsOwner(_ tool: String, _ arguments: [String], what: String) throws {
        let executable = binDirectory + "/" + tool
        if asRoot {
            let runuser = ["/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser"].first {
                FileManager.default.isExecutableFile(atPath: $0)
            }
            guard let runuser else { throw TestEnvironmentError("runuser not found; cannot run PostgreSQL as root") }
            try Self.run(runuser, ["-u", "postgres", "--", executable] + arguments, what: what, log: logTail)
        } else {
            try Self.run(executable, arguments, what: what, log: logTail)
        }
    }

    private func logTail() -> String {
        let log = (try? String(contentsOf: directory.appendingPathComponent("server.log"), encoding: .utf8)) ?? ""
        return log.split(separator: "\n").suffix(10).joined(separator: "\n")
    }

    private static func run(
        _ executable: String, _ arguments: [String], what: String, log: () -> String = { "" }
    ) throws {
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw TestEnvironmentError("\(what): \(executable) not found (set ISSUERD_TEST_PG_BIN)")
        }
        let status = ChildProcess.run(executable, arguments)
        guard status == 0 else {
            throw TestEnvironmentError("\(what) failed (status \(status.map(String.init) ?? "killed"))\n\(log())")
        }
    }
}
