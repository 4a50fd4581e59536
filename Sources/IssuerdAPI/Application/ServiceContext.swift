import Foundation
import IssuerdAuth
import IssuerdConsole
import IssuerdCore
import IssuerdCrypto
import IssuerdHistory
import IssuerdKeys
import IssuerdMDES
import IssuerdPostgres
import IssuerdStorage

/// What every route and service needs, built once by ``IssuerdApplication`` and passed down
/// explicitly (no globals).
struct ServiceContext: Sendable {
    let configuration: IssuerdConfiguration
    /// The primary: live decisions, step-up, idempotency, sessions and every write.
    let database: PostgresPool
    /// Where the analysts' reads go: console pages' read APIs, backtests (API, jobs, read-aheads),
    /// exports and rule performance. The read database's pool when `ISSUERD_READ_DATABASE_URL`
    /// is set (``readReplica``), else ``database`` itself. Nothing writes through it; wrap its
    /// users in ``analystRead(_:)``.
    let reads: PostgresPool
    /// The read database and its lag, when `ISSUERD_READ_DATABASE_URL` is set.
    let readReplica: ReadReplica?
    let vault: PANVault
    /// The HSM holding the wrapping and TAV keys, when `ISSUERD_PKCS11_MODULE` is set.
    let hsm: HSMKeyStore?
    let crypto: ProvisioningCrypto
    /// Google Pay push provisioning's opaque card providers and OpenPGP keys.
    let googlePay: GooglePayCrypto
    let rules: RulesService
    let appTokens: AppTokenVerifier
    let tsp: TSPAuthenticator
    let apiKeys: APIKeyAuthenticator
    /// The analyst console's sessions (also accepted by ``apiKeys`` where a route allows them).
    let consoleSessions: ConsoleSessions
    let idempotency: IdempotencyStore
    /// Parsed hours of stored attempts kept between backtests (`ISSUERD_BACKTEST_CACHE_ATTEMPTS`).
    let backtestCache: BacktestWindowCache
    /// Reads a period into ``backtestCache`` ahead of its backtest.
    let backtestPreparation: BacktestPreparation
    /// One backtest at a time on this instance.
    let backtestGate = BacktestGate()
    /// The MDES issuer keys (PEM files and HSM labels); nil without MDES settings.
    let mdesIssuerKeys: MDESIssuerKeyRing?
    /// Backtests run in the background for the console (they take ``backtestGate``'s place).
    let backtestJobs: BacktestJobs
    let metrics: MetricsRegistry
    /// Analysts' reads the read database cancelled (recovery conflicts), by what became of them:
    /// `retried` (run again once) or `refused` (cancelled again, answered 503); ``analystRead(_:)``.
    let readConflicts: Counter
    /// MDES account updates for tokens no reissue moved, by reason code; registered whether or
    /// not MDES is configured, so its alert never waits for the series.
    let unrequestedAccountUpdates: Counter
    let logger: Logger
    /// The time source; tests may pin it.
    let clock: @Sendable () -> Date

    /// The current time.
    var now: Date { clock() }

    /// Builds every component from validated configuration.
    init(
        configuration: IssuerdConfiguration, database: PostgresPool, readReplica: ReadReplica? = nil,
        metrics: MetricsRegistry, logger: Logger, clock: @escaping @Sendable () -> Date
    ) throws {
        self.configuration = configuration
        self.database = database
        self.readReplica = readReplica
        let reads = readReplica?.pool ?? database
        self.reads = reads
        self.metrics = metrics
        self.logger = logger
        self.clock = clock
        let hsm = try configuration.hsm.map { try HSMKeyStore.open($0) }
        self.hsm = hsm
        vault = try KeyRingLoader.vault(masterKeys: configuration.masterKeys, hsm: hsm, database: database)
        if !vault.keyRing.isMemoryLocked {
            logger.warning(
                "the PAN data keys are not in locked memory (mlock failed: raise RLIMIT_MEMLOCK, e.g. LimitMEMLOCK=1M in the unit)"
            )
        }
        if let hsm {
            logger.info(
                "issuer keys in the HSM",
                [
                    "token": "\(hsm.settings.tokenLabel)", "dataKeyVersions": "\(vault.keyRing.versions)",
                    "sessions": .int(hsm.settings.sessionCount),
                ])
            let token = hsm.token
            metrics.gauge(
                "issuerd_hsm_sessions_reopened", help: "PKCS#11 sessions replaced after the HSM closed them.",
                labels: []
            ) {
                [([], Double(token.sessionsReopened))]
            }
        }
        mdesIssuerKeys = try configuration.mdes.map { try HSMIssuerKeyUnwrapper.ring($0, hsm: hsm) }
        crypto = try ProvisioningCrypto(configuration: configuration, vault: vault, hsm: hsm, logger: logger)
        googlePay = try GooglePayCrypto(settings: configuration.googlePay, tav: crypto.tav, hsm: hsm)
        rules = try RulesService(
            directory: configuration.rulesDirectory, logger: logger.labelled("issuerd.rules"), metrics: metrics,
            database: database, approvalRequired: configuration.rulesApprovalRequired,
            author: configuration.rulesAuthor, clock: clock)
        appTokens = try AppTokenVerifier(configuration.appJWT)
        tsp = try TSPAuthenticator(secret: configuration.tspHMACSecret.unsafeValue)
        consoleSessions = ConsoleSessions(database: database, settings: configuration.console, clock: clock)
        apiKeys = APIKeyAuthenticator(database: database, sessions: consoleSessions)
        idempotency = IdempotencyStore(database: database)
        readConflicts = metrics.counter(
            "issuerd_read_conflicts_total",
            help:
                "Analysts' reads the read database cancelled (a recovery conflict on a standby), by result: retried once, or refused with 503.",
            labels: ["result"])
        for result in ["retried", "refused"] { readConflicts.initialize(labels: [result]) }
        unrequestedAccountUpdates = metrics.counter(
            "issuerd_unrequested_account_updates_total",
            help:
                "MDES account updates (by reason code) for tokens no reissue of issuerd moved: another system changed the mapping.",
            labels: ["reason"])
        for reason in ["FUNDING_ACCOUNT_UPDATE", "REDIGITIZATION_COMPLETE"] {
            unrequestedAccountUpdates.initialize(labels: [reason])
        }
        let hours = metrics.counter(
            "issuerd_backtest_cache_hours_total",
            help: "Complete hours backtests and read-aheads took from memory (hit) or read (miss).", labels: ["result"])
        hours.increment(by: 0, labels: ["hit"])
        hours.increment(by: 0, labels: ["miss"])
        let backtestCache = BacktestWindowCache(capacity: configuration.console.backtestCacheAttempts) { hits, misses in
            hours.increment(by: Double(hits), labels: ["hit"])
            hours.increment(by: Double(misses), labels: ["miss"])
        }
        self.backtestCache = backtestCache
        backtestPreparation = BacktestPreparation(
            cache: backtestCache, database: reads, logger: logger.labelled("issuerd.rules"))
        backtestJobs = BacktestJobs(gate: backtestGate, logger: logger.labelled("issuerd.rules"))
        metrics.gauge("issuerd_backtest_cache_attempts", help: "Stored attempts kept parsed between backtests.") {
            [([], Double(backtestCache.statistics.attempts))]
        }
    }
}

extension MasterKeyRing {
    /// Builds the ring from the validated configuration (current version first).
    init(_ settings: [MasterKeySetting]) throws {
        var keys: [Int: SymmetricKey] = [:]
        for setting in settings { keys[setting.version] = try SymmetricKey(bytes: setting.key.unsafeValue) }
        try self.init(keys: keys)
    }
}
