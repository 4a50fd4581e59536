import Foundation
import IssuerdAuth
import IssuerdCore
import IssuerdCrypto
import IssuerdPostgres
import IssuerdTestSupport

@testable import IssuerdAPI

/// A real issuerd on a loopback port 0, over a fresh migrated database, trusting a generated
/// Apple-shaped PKI: what the API tests talk to, in process through its router or over HTTP
/// (``TestTransport``).
///
/// Each instance owns its database and PKI, so suites run in parallel without sharing state.
/// The application serves as the service role (``TestServiceRole``), as a deployment does,
/// unless the test gives its own `ISSUERD_DATABASE_URL`; ``database`` and ``pool`` are the owner.
final class TestApplication: @unchecked Sendable {  // immutable after init; the server is thread-safe
    let database: TestDatabase
    /// The application's connection: the service role on ``database``, or the test's own URL.
    let serviceConnectionString: String
    let application: IssuerdApplication
    let client: HTTPTestClient
    let pki: DevelopmentPKI
    let directory: URL
    let appJWTSecret = String(repeating: "a", count: 40)
    let tspSecret = "tsp-secret-0123456789abcdef"
    let pool: PostgresPool
    /// False for a second instance over another one's database (that one drops it).
    let ownsDatabase: Bool

    /// The repository root (for `rules/` and `sql/`).
    /// The build every test instance reports (`issuerd_build_info`, outbound `User-Agent`).
    static let build = BuildInfo(version: "9.9.9-test", commit: "0123456789abcdef0123456789abcdef01234567")
    static let repositoryRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Starts an instance.
    ///
    /// - Parameters:
    ///   - environment: Settings added to (or overriding) the test defaults.
    ///   - rulesDirectory: Defaults to the repository's `rules/`.
    ///   - sharing: Another instance whose database (and notification log) this one uses, as a
    ///     second `issuerd serve` over the same PostgreSQL would; it must outlive this one.
    ///   - logger: Where the application logs (default: nowhere).
    ///   - prepare: Runs on the fresh database before the application is built (e.g. to store
    ///     HSM data keys, which the application loads in its initialiser).
    ///   - poolSize: Connections of ``pool``, the tests' own (the application has its own pool).
    ///   - database: A fresh database made elsewhere (``TestDatabase/create(admin:)``, e.g. on a
    ///     ``DisposablePostgresServer`` with a standby) instead of one on the shared test server.
    ///   - transport: How ``client`` reaches the server; ``TestTransport/default`` unless given (a test
    ///     about what only a socket shows says `.live`).
    init(
        environment: [String: String] = [:], rulesDirectory: String? = nil, sharing: TestApplication? = nil,
        clock: @escaping @Sendable () -> Date = { Date() },
        prepare: ((TestDatabase) throws -> Void)? = nil, logger: Logger? = nil, poolSize: Int = 2,
        transport: TestTransport = .default, database given: TestDatabase? = nil
    ) throws {
        let database = try sharing?.database ?? given ?? TestDatabase.create()
        let ownsDatabase = sharing == nil
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "issuerd-api-\(UUID().uuidString)")
        // A start that fails (many tests expect it to) never reaches deinit: remove what it made.
        var started: IssuerdApplication?
        do {
            try prepare?(database)
            let serviceConnectionString =
                try environment["ISSUERD_DATABASE_URL"] ?? sharing?.serviceConnectionString
                ?? TestServiceRole.prepare(database)
            self.serviceConnectionString = serviceConnectionString
            pki = try DevelopmentPKI.generate()
            try pki.write(to: directory.appendingPathComponent("pki"))
            var settings: [String: String] = [
                "ISSUERD_DATABASE_URL": serviceConnectionString,
                "ISSUERD_LISTEN": "127.0.0.1:0",
                "ISSUERD_DB_POOL_SIZE": "6",
                "ISSUERD_RULES_DIR": rulesDirectory ?? Self.repositoryRoot.appendingPathComponent("rules").path,
                "ISSUERD_SQL_DIR": Self.repositoryRoot.appendingPathComponent("sql").path,
                "ISSUERD_APPLE_TRUST": directory.appendingPathComponent("pki/root.pem").path,
                "ISSUERD_TAV_SIGNING_KEY": directory.appendingPathComponent("pki/tav-signing-key.pem").path,
                "ISSUERD_MASTER_KEY": Data(repeating: 0x42, count: 32).base64EncodedString(),
                "ISSUERD_APP_JWT_SECRET": appJWTSecret,
                "ISSUERD_TSP_HMAC_SECRET": tspSecret,
                "ISSUERD_NOTIFY_LOG_FILE": (sharing?.directory ?? directory).appendingPathComponent(
                    "notifications.jsonl"
                ).path,
                "ISSUERD_LOG_LEVEL": "critical",
                // Off unless a test turns it on: its rounds would count in the cache's metrics.
                "ISSUERD_BACKTEST_KEEP_RECENT_HOURS": "0",
            ]
            settings.merge(environment) { _, new in new }
            var configuration = try IssuerdConfiguration(ConfigurationReader(settings))
            configuration.build = Self.build
            let application = try IssuerdApplication(
                configuration: configuration,
                logger: logger ?? Logger(label: "test", minimumLevel: .critical, handler: DiscardingLogHandler()),
                clock: clock)
            started = application
            try application.start()
            self.application = application
        } catch {
            started?.shutdown(timeout: .seconds(2))
            if ownsDatabase { database.drop() }
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
        self.database = database
        self.ownsDatabase = ownsDatabase
        self.directory = directory
        client = transport.client(for: application)
        pool = database.makePool(size: poolSize)
    }

    deinit {
        application.shutdown(timeout: .seconds(2))
        pool.close()
        if ownsDatabase { database.drop() }
        try? FileManager.default.removeItem(at: directory)
    }

    /// A bearer token for the issuer app of `customerID`.
    func appToken(customer customerID: String, lifetime: TimeInterval = 600, now: Date = Date()) throws -> String {
        try AppTokenVerifier.mintHS256(secret: appJWTSecret, customerID: customerID, lifetime: lifetime, now: now)
    }

    /// A new API key of `role`.
    func apiKey(role: APIKeyRole = .admin) throws -> String {
        try pool.withConnection { try APIKeyAuthenticator.create(role: role, name: "test \(role)", connection: $0).key }
    }

    /// The `X-Issuerd-Signature` header for `body`.
    func tspSignature(_ body: String, at time: Date = Date()) throws -> String {
        try TSPAuthenticator.sign(
            body: Array(body.utf8), secret: tspSecret, timestamp: Int64(time.timeIntervalSince1970))
    }

    /// POSTs JSON signed as the TSP.
    func postAsTSP(_ path: String, _ json: String, headers: [String: String] = [:]) throws -> TestHTTPResponse {
        var all = headers
        all["X-Issuerd-Signature"] = try tspSignature(json)
        return try client.postJSON(path, json, headers: all)
    }
}
