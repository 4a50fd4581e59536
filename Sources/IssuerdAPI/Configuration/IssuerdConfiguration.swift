import Foundation
import IssuerdAuth
import IssuerdConsole
import IssuerdCore
import IssuerdHTTP
import IssuerdHistory
import IssuerdKeys
import IssuerdOutbox
import IssuerdStorage

/// Everything `issuerd serve` needs, read once at start-up, validated eagerly, passed down
/// explicitly. There are no configuration globals.
///
/// Every key is documented in `docs/configuration.md`; a missing or malformed one stops start-up
/// with one ``ConfigurationError`` line naming it.
public struct IssuerdConfiguration: Sendable {
    /// libpq URI or conninfo string (`ISSUERD_DATABASE_URL`).
    public var databaseURL: Redacted<String>
    /// Connections in the pool (`ISSUERD_DB_POOL_SIZE`, default 8).
    public var databasePoolSize: Int
    /// Where the analysts' reads go (`ISSUERD_READ_DATABASE_URL`, e.g. a streaming standby):
    /// console pages, backtests, exports and rule performance; nil reads them on the primary.
    public var readDatabaseURL: Redacted<String>?
    /// Connections of the read database's pool (`ISSUERD_READ_DB_POOL_SIZE`, default 4).
    public var readDatabasePoolSize: Int
    /// How long a request waits for a pooled connection (`ISSUERD_DB_ACQUIRE_TIMEOUT`, default 2s).
    public var databaseAcquireTimeout: Duration
    /// Over TCP, how long a statement or keepalive probe may go unacknowledged before the
    /// connection counts as dead (`ISSUERD_DB_DEAD_PEER_TIMEOUT`, default 3s): a network
    /// partition then answers 503 within seconds instead of holding the request.
    public var databaseDeadPeerTimeout: Duration
    /// How long a statement waits for the database's answer before the request gets a 503
    /// and the connection is closed (`ISSUERD_DB_STATEMENT_TIMEOUT`, default 5s).
    public var databaseStatementTimeout: Duration
    /// How often a warning that every request repeats (the database unavailable or out of disk)
    /// is logged: once per interval, with the count left out (`ISSUERD_LOG_REPEAT_INTERVAL`, default 10s).
    public var logRepeatInterval: Duration
    /// `host:port` to listen on (`ISSUERD_LISTEN`, default `127.0.0.1:8080`).
    public var listen: String
    /// Handler threads (`ISSUERD_HTTP_THREADS`, default: the pool size, since a blocking
    /// database call occupies its thread).
    public var httpThreads: Int
    /// libmicrohttpd's network threads (`ISSUERD_HTTP_NETWORK_THREADS`): one per four
    /// processors by default, at most ``httpThreads``.
    public var httpNetworkThreads: Int
    /// Largest accepted request body in bytes (`ISSUERD_BODY_LIMIT`, default 1 MiB).
    public var bodyLimit: Int
    /// Connection limits and request deadlines (`ISSUERD_HTTP_*`).
    public var httpLimits: HTTPServerLimits
    /// Directory of the active rules (`ISSUERD_RULES_DIR`, default `rules`).
    public var rulesDirectory: String
    /// Whether a new rules version waits for a second person's approval
    /// (`ISSUERD_RULES_APPROVAL`: `off`, the default, or `required`).
    public var rulesApprovalRequired: Bool
    /// Who changes to the rule files are by (`ISSUERD_RULES_AUTHOR`); unset: the git commit's author.
    public var rulesAuthor: String?
    /// Directory of the SQL migrations (`ISSUERD_SQL_DIR`, default `sql`).
    public var sqlDirectory: String
    /// Whether `serve` applies pending migrations at start (`ISSUERD_MIGRATE_ON_START`, default true).
    public var migrateOnStart: Bool
    /// Apple trust profile (`ISSUERD_APPLE_TRUST`).
    public var appleTrust: AppleTrustSetting
    /// Whether chain validation checks validity dates (`ISSUERD_APPLE_CHECK_VALIDITY`, default true).
    public var appleCheckValidity: Bool
    /// Whether the unverified RSA_V2 scheme is offered (`ISSUERD_ENABLE_RSA_V2`, default false).
    public var enableRSAV2: Bool
    /// Master keys protecting PANs and one-time codes, current first; may be empty when an HSM
    /// holds the data keys (``hsm``).
    public var masterKeys: [MasterKeySetting]
    /// The PKCS#11 HSM holding the PAN wrapping key and the TAV key (`ISSUERD_PKCS11_*`); nil
    /// without `ISSUERD_PKCS11_MODULE`.
    public var hsm: HSMSettings?
    /// How the issuer app's bearer tokens are verified.
    public var appJWT: AppJWTSetting
    /// Shared secret of TSP request signatures (`ISSUERD_TSP_HMAC_SECRET`).
    public var tspHMACSecret: Redacted<String>
    /// Mastercard TAV signing key, PEM text or a path to it (`ISSUERD_TAV_SIGNING_KEY`).
    public var tavSigningKeyPEM: Redacted<String>?
    /// How long activation data stays valid (`ISSUERD_ACTIVATION_VALIDITY`, default 30m).
    public var activationValidity: Duration
    /// Step-up delivery provider (`ISSUERD_NOTIFY_PROVIDER`: `log` or `webhook`).
    public var notify: NotifySetting
    /// Methods with a provider of their own (`ISSUERD_EMAIL_PROVIDER=smtp` and its `ISSUERD_SMTP_*`).
    public var stepUpProviders: StepUpProviders
    /// Where TSP notifications go (`ISSUERD_TSP_WEBHOOK_URL`); none when unset.
    public var tspWebhookURL: URL?
    /// Mastercard's Customer Service API (`ISSUERD_MDES_CSAPI_URL` and its companions); nil when unset.
    public var mdesCustomerService: MDESCustomerServiceSettings?
    /// Minimum log level (`ISSUERD_LOG_LEVEL`, default info).
    public var logLevel: LogLevel
    /// In-app provisioning requests per customer (`ISSUERD_RATE_LIMIT_CUSTOMER`, default `10/1m`).
    public var rateLimitCustomer: RateLimit
    /// In-app provisioning requests per card (`ISSUERD_RATE_LIMIT_CARD`, default `5/1m`).
    public var rateLimitCard: RateLimit
    /// One-time codes, message language and In-App Verification (`ISSUERD_OTP_*`, `ISSUERD_IAV_*`).
    public var stepUp: StepUpSettings
    /// The delivery outbox's dispatcher (`ISSUERD_OUTBOX_*`).
    public var outbox: OutboxSettings
    /// The analyst console's sessions (`ISSUERD_CONSOLE_*`).
    public var console: ConsoleSettings
    /// The audit chain's background sealer (`ISSUERD_AUDIT_*`).
    public var audit: AuditSettings
    /// How long an `Idempotency-Key` is remembered (`ISSUERD_IDEMPOTENCY_RETENTION`, default 7d,
    /// 1h–400d): after that, the same key is a new request.
    public var idempotencyRetention: Duration
    /// How outcomes count: network signals, label maturity (`ISSUERD_OUTCOMES_*`).
    public var outcomes: OutcomeSettings
    /// Mastercard MDES inbound (`ISSUERD_MDES_ISSUER_KEYS`, …); nil without issuer keys.
    public var mdes: MDESSettings?
    /// Google Pay push provisioning (`ISSUERD_MDES_MASTERCARD_*`, `ISSUERD_GOOGLE_OPC_*`).
    public var googlePay: GooglePaySettings
    /// What a reissued card's new account data is encrypted to (`ISSUERD_TSP_ACCOUNT_CERT`, …).
    public var reissue: ReissueSettings

    /// The running build (version and commit), for `/metrics` and outbound `User-Agent`s: stamped
    /// by the executable, not read from a setting.
    public var build = BuildInfo.unknown

    /// Reads and validates every setting.
    ///
    /// - Throws: ``ConfigurationError`` for the first missing or malformed setting.
    public init(_ reader: ConfigurationReader) throws {
        databaseURL = try OperatorSettings.databaseURL(reader)
        databasePoolSize = try reader.integer("ISSUERD_DB_POOL_SIZE", default: 8, in: 1...256)
        readDatabaseURL = try reader.string("ISSUERD_READ_DATABASE_URL").map {
            Redacted(try OperatorSettings.connectionString($0, key: "ISSUERD_READ_DATABASE_URL", reader: reader))
        }
        readDatabasePoolSize = try reader.integer("ISSUERD_READ_DB_POOL_SIZE", default: 4, in: 2...64)
        databaseAcquireTimeout = try reader.duration(
            "ISSUERD_DB_ACQUIRE_TIMEOUT", default: .seconds(2), in: .milliseconds(10)...(.seconds(60)))
        databaseDeadPeerTimeout = try reader.duration(
            "ISSUERD_DB_DEAD_PEER_TIMEOUT", default: .seconds(3), in: .seconds(1)...(.seconds(600)))
        databaseStatementTimeout = try reader.duration(
            "ISSUERD_DB_STATEMENT_TIMEOUT", default: .seconds(5), in: .milliseconds(100)...(.seconds(600)))
        logRepeatInterval = try reader.duration(
            "ISSUERD_LOG_REPEAT_INTERVAL", default: .seconds(10), in: .milliseconds(100)...(.seconds(3600)))
        listen = reader.string("ISSUERD_LISTEN") ?? "127.0.0.1:8080"
        httpThreads = try reader.integer("ISSUERD_HTTP_THREADS", default: databasePoolSize, in: 1...512)
        httpNetworkThreads = try reader.integer(
            "ISSUERD_HTTP_NETWORK_THREADS",
            default: min(httpThreads, HTTPServerConfiguration.defaultNetworkThreadCount()), in: 1...httpThreads)
        bodyLimit = try reader.integer("ISSUERD_BODY_LIMIT", default: 1 << 20, in: 1024...(64 << 20))
        httpLimits = try HTTPServerLimits(reader, threads: httpThreads)
        rulesDirectory = reader.string("ISSUERD_RULES_DIR") ?? "rules"
        rulesApprovalRequired =
            try reader.choice("ISSUERD_RULES_APPROVAL", default: "off", from: ["off", "required"]) == "required"
        rulesAuthor = reader.string("ISSUERD_RULES_AUTHOR")
        sqlDirectory = reader.string("ISSUERD_SQL_DIR") ?? "sql"
        migrateOnStart = try reader.boolean("ISSUERD_MIGRATE_ON_START", default: true)
        appleTrust = try AppleTrustSetting(reader.string("ISSUERD_APPLE_TRUST") ?? "production")
        appleCheckValidity = try reader.boolean("ISSUERD_APPLE_CHECK_VALIDITY", default: true)
        enableRSAV2 = try reader.boolean("ISSUERD_ENABLE_RSA_V2", default: false)
        hsm = try HSMSettings.read(reader, defaultSessions: httpThreads)
        masterKeys = try MasterKeySetting.read(reader, optional: hsm != nil)
        appJWT = try AppJWTSetting(reader)
        tspHMACSecret = Redacted(
            try reader.required("ISSUERD_TSP_HMAC_SECRET", hint: "the shared secret of X-Issuerd-Signature"))
        guard tspHMACSecret.unsafeValue.utf8.count >= 16 else {
            throw ConfigurationError(key: "ISSUERD_TSP_HMAC_SECRET", problem: "must be at least 16 bytes")
        }
        tavSigningKeyPEM = try reader.pem("ISSUERD_TAV_SIGNING_KEY").map(Redacted.init)
        activationValidity = try reader.duration(
            "ISSUERD_ACTIVATION_VALIDITY", default: .seconds(1800), in: .seconds(60)...(.seconds(30 * 86400)))
        notify = try NotifySetting(reader)
        if let text = reader.string("ISSUERD_TSP_WEBHOOK_URL") {
            tspWebhookURL = try ConfigurationReader.httpURL(text, key: "ISSUERD_TSP_WEBHOOK_URL")
        } else {
            tspWebhookURL = nil
        }
        mdesCustomerService = try MDESCustomerServiceSettings.read(reader)
        if case .hsm = mdesCustomerService?.signingKey, hsm == nil {
            throw ConfigurationError(
                key: "ISSUERD_MDES_SIGNING_KEY_LABEL",
                problem: "names a key in the HSM, but ISSUERD_PKCS11_MODULE is not set")
        }
        guard let level = LogLevel(name: reader.string("ISSUERD_LOG_LEVEL") ?? "info") else {
            throw ConfigurationError(
                key: "ISSUERD_LOG_LEVEL", problem: "must be one of trace, debug, info, notice, warning, error, critical"
            )
        }
        logLevel = level
        rateLimitCustomer = try reader.rateLimit(
            "ISSUERD_RATE_LIMIT_CUSTOMER", default: RateLimit(count: 10, window: 60))
        rateLimitCard = try reader.rateLimit("ISSUERD_RATE_LIMIT_CARD", default: RateLimit(count: 5, window: 60))
        stepUp = try StepUpSettings(reader)
        outbox = try OutboxSettings(reader)
        stepUpProviders = try StepUpProviders(reader, timeout: outbox.httpTimeout)
        console = try ConsoleSettings(reader)
        audit = try AuditSettings(reader)
        idempotencyRetention = try reader.duration(
            "ISSUERD_IDEMPOTENCY_RETENTION", default: .seconds(7 * 86_400),
            in: .seconds(3_600)...(.seconds(400 * 86_400)))
        outcomes = try OutcomeSettings(reader)
        mdes = try MDESSettings.read(reader, hsm: hsm != nil)
        googlePay = try GooglePaySettings(reader)
        reissue = try ReissueSettings(reader)
    }
}

/// Which root Apple certificate chains must lead to.
public enum AppleTrustSetting: Sendable, Equatable {
    /// Apple Root CA - G3, shipped with issuerd.
    case production
    /// Apple's sandbox (test) hierarchy.
    case sandbox
    /// A PEM root at this path, for tests and private deployments.
    case custom(path: String)

    init(_ text: String) throws {
        switch text {
        case "production": self = .production
        case "sandbox": self = .sandbox
        default:
            guard FileManager.default.isReadableFile(atPath: text) else {
                throw ConfigurationError(
                    key: "ISSUERD_APPLE_TRUST",
                    problem: "must be production, sandbox, or the path of a readable PEM root")
            }
            self = .custom(path: text)
        }
    }
}
