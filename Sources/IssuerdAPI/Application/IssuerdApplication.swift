import Foundation
import IssuerdConsole
import IssuerdCore
import IssuerdCrypto
import IssuerdHTTP
import IssuerdHistory
import IssuerdKeys
import IssuerdOutbox
import IssuerdPostgres
import IssuerdStorage

/// The running service: configuration, database pool, services, router and HTTP server, wired
/// once; its ``services`` start in one order and stop in the reverse.
///
/// `issuerd serve` owns one; the API tests start one on port 0 against a throwaway database.
public final class IssuerdApplication: Sendable {
    /// The settings this instance was built from.
    public let configuration: IssuerdConfiguration
    /// Every metric the instance exposes on `/metrics`.
    public let metrics: MetricsRegistry
    let logger: Logger
    let database: PostgresPool
    let context: ServiceContext
    let server: HTTPServer
    /// Every route; what ``server`` answers with, and what tests drive in process.
    let router: Router
    let rulesWatcher: RulesFileWatcher
    let outbox: OutboxDispatcher
    let auditSealer: AuditSealer
    let partitionKeeper: AttemptPartitionKeeper
    let idempotencyPruner: IdempotencyPruner

    /// Builds every component without starting anything that listens or connects.
    ///
    /// - Throws: ``ConfigurationError`` or a component's error for a setting that cannot work
    ///   (an unparsable listen address, an unreadable rules directory, a bad key).
    public init(
        configuration: IssuerdConfiguration, logger: Logger, clock: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        self.configuration = configuration
        self.logger = logger
        let metrics = MetricsRegistry()
        self.metrics = metrics
        let build = configuration.build
        metrics.gauge(
            "issuerd_build_info", help: "The running build's version and commit (value always 1).",
            labels: ["version", "commit"]
        ) { [([build.version, build.commit], 1)] }
        let poolWait = metrics.histogram(
            "issuerd_db_pool_wait_seconds",
            help: "How long requests waited for a database connection (for a free one, or to open one).",
            buckets: [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5])
        poolWait.initialize()
        let poolTimeouts = metrics.counter(
            "issuerd_db_pool_timeouts_total",
            help: "Requests that got no database connection within ISSUERD_DB_ACQUIRE_TIMEOUT (answered 503).")
        poolTimeouts.initialize()
        let database = PostgresPool(
            configuration: PostgresPoolConfiguration(
                connectionString: configuration.databaseURL.unsafeValue,
                size: configuration.databasePoolSize,
                acquireTimeout: configuration.databaseAcquireTimeout,
                connectTimeout: .seconds(2), deadPeerTimeout: configuration.databaseDeadPeerTimeout,
                statementTimeout: configuration.databaseStatementTimeout),
            logger: logger.labelled("issuerd.postgres"),
            observer: PostgresPoolObserver(
                acquired: { poolWait.observe($0.timeInterval) }, timedOut: { poolTimeouts.increment() }))
        self.database = database
        metrics.gauge("issuerd_db_pool_connections", help: "Database pool connections by state.", labels: ["state"]) {
            let statistics = database.statistics
            return [
                (["in_use"], Double(statistics.inUse)), (["idle"], Double(statistics.idle)),
                (["size"], Double(statistics.size)),
            ]
        }

        // The analysts' reads: a pool of their own on the read database when one is set.
        let readReplica = configuration.readDatabaseURL.map { url in
            ReadReplica(
                pool: PostgresPool(
                    configuration: PostgresPoolConfiguration(
                        connectionString: url.unsafeValue, size: configuration.readDatabasePoolSize,
                        acquireTimeout: configuration.databaseAcquireTimeout, connectTimeout: .seconds(2),
                        deadPeerTimeout: configuration.databaseDeadPeerTimeout),
                    logger: logger.labelled("issuerd.postgres.reads")),
                metrics: metrics, clock: clock)
        }
        if readReplica == nil { ReadReplica.registerWithoutReplica(metrics: metrics) }
        let context = try ServiceContext(
            configuration: configuration, database: database, readReplica: readReplica, metrics: metrics,
            logger: logger, clock: clock)
        self.context = context
        let rules = context.rules
        rulesWatcher = RulesFileWatcher(
            directory: rules.loader.directory, onPoll: { rules.follow() },
            onChange: { rules.reload(trigger: "watcher") })
        let readiness = Readiness(
            probes: [Self.databaseProbe(database), Self.rulesProbe(rules)]
                + (context.hsm.map { [Self.hsmProbe($0)] } ?? []),
            rulesetVersion: { rules.current.version })
        metrics.gauge("issuerd_ready", help: "1 while /readyz would answer 200, else 0 (read at scrape time).") {
            [([], readiness.evaluate().ready ? 1 : 0)]
        }
        var table = RouteTable(
            admission: context.admission(for:),
            repeatedLogs: RepeatedLogLimiter(interval: configuration.logRepeatInterval))
        OperationsRoutes.register(in: &table, readiness: readiness, metrics: metrics)
        CardRoutes.register(in: &table, context: context)
        GooglePayRoutes.register(in: &table, context: context)
        TSPRoutes.register(in: &table, context: context)
        AdminRoutes.register(in: &table, context: context)
        ReissueRoutes.register(in: &table, context: context)
        RulesRoutes.register(in: &table, context: context)
        RuleChangeRoutes.register(in: &table, context: context)
        AuditRoutes.register(in: &table, context: context)
        StepUpRoutes.register(in: &table, context: context)
        AttemptRoutes.register(in: &table, context: context)
        OutcomeRoutes.register(in: &table, context: context)
        CaseRoutes.register(in: &table, context: context)
        AnalystRoutes.register(in: &table, context: context)
        MDESRoutes.register(in: &table, context: context)
        let apiKeys = context.apiKeys
        for route in ConsoleRoutes.routes(
            sessions: context.consoleSessions, principal: { try apiKeys.principal(key: $0) })
        {
            table.add(route.method, route.pattern, route.handler)
        }
        self.routes = table.router.routes.map { ($0.method.rawValue, $0.pattern) }

        let listen: ListenAddress
        do {
            listen = try ListenAddress.parse(configuration.listen)
        } catch {
            throw ConfigurationError(
                key: "ISSUERD_LISTEN", problem: "must be host:port, e.g. 127.0.0.1:8080 or [::1]:8080")
        }
        let serverConfiguration = HTTPServerConfiguration(
            listen: listen, threadCount: configuration.httpThreads,
            networkThreadCount: configuration.httpNetworkThreads, bodyLimit: configuration.bodyLimit,
            limits: configuration.httpLimits)
        let delivery = OutboxDelivery(
            notify: configuration.notify, tspWebhookURL: configuration.tspWebhookURL,
            tspSecret: configuration.tspHMACSecret, settings: configuration.outbox,
            customerService: try configuration.mdesCustomerService.map {
                CustomerServiceDelivery(
                    settings: $0, signingKey: try Self.customerServiceSigner($0, hsm: context.hsm),
                    timeout: configuration.outbox.httpTimeout, userAgent: build.userAgent)
            },
            providers: configuration.stepUpProviders, sealer: OutboxSealer(keyRing: context.vault.keyRing),
            clock: clock, userAgent: build.userAgent, logger: logger.labelled("issuerd.outbox"), metrics: metrics)
        self.outbox = OutboxDispatcher(
            database: database, settings: configuration.outbox, delivery: delivery, metrics: metrics,
            logger: logger.labelled("issuerd.outbox"))
        self.partitionKeeper = AttemptPartitionKeeper(
            database: database, logger: logger.labelled("issuerd.partitions"))
        self.idempotencyPruner = IdempotencyPruner(
            database: database, retention: configuration.idempotencyRetention,
            logger: logger.labelled("issuerd.idempotency"))
        self.auditSealer = AuditSealer(
            database: database, settings: configuration.audit, metrics: metrics,
            logger: logger.labelled("issuerd.audit"))
        self.router = table.router
        self.server = HTTPServer(
            configuration: serverConfiguration, router: table.router, logger: logger.labelled("issuerd.http"),
            metrics: metrics)
    }

    /// Every registered route as (method, pattern), for the OpenAPI coverage test.
    public let routes: [(method: String, pattern: String)]

    /// The port the server listens on (the real one when configured with port 0).
    public var port: Int { server.port }

    /// What the instance runs, in start order; ``shutdown(timeout:)`` stops them in reverse.
    /// docs/architecture.md states the same order and why.
    private var services: [LifecycleService] {
        let configuration = configuration
        let (logger, database, context) = (logger, database, context)
        let (server, rulesWatcher, outbox, auditSealer) = (server, rulesWatcher, outbox, auditSealer)
        let (partitionKeeper, idempotencyPruner) = (partitionKeeper, idempotencyPruner)
        return [
            LifecycleService(
                "database",
                start: {
                    if configuration.migrateOnStart {
                        let applied = try Self.migrate(configuration: configuration, database: database, logger: logger)
                        if !applied.isEmpty { logger.info("applied migrations", ["count": .int(applied.count)]) }
                    }
                    Self.reportExcessPrivileges(database: database, logger: logger)
                }, stop: { _ in database.close() }),
            // Before requests, so the console's first look at the lag has a figure; its pool
            // closes just before the primary's, after everything that reads there stopped.
            LifecycleService(
                "read replica", start: { context.readReplica?.start() },
                stop: { timeout in context.readReplica?.stop(timeout: timeout) }),
            // After the migrations, before requests: the attempts' months ahead exist.
            LifecycleService(
                "attempt partitions", start: { partitionKeeper.start() }, stop: { partitionKeeper.stop(timeout: $0) }),
            LifecycleService(
                "idempotency keys", start: { idempotencyPruner.start() },
                stop: { idempotencyPruner.stop(timeout: $0) }),
            // After the migrations, before requests: under approval the approved rules serve.
            LifecycleService("rules approval", start: { try context.rules.startApproval() }, stop: { _ in }),
            LifecycleService("backtest jobs", start: {}, stop: { context.backtestJobs.stop(timeout: $0.timeInterval) }),
            // A waiting request dropped, a running one waited for.
            LifecycleService("backtest read-ahead", start: {}, stop: { context.backtestPreparation.stop(timeout: $0) }),
            // Stopped after one last round, so the instance's last entries are chained.
            LifecycleService(
                "audit sealer", start: { if configuration.audit.seal { auditSealer.start() } },
                stop: { auditSealer.stop(timeout: $0) }),
            LifecycleService(
                "outbox dispatcher", start: { if configuration.outbox.dispatch { outbox.start() } },
                stop: { outbox.stop(timeout: $0) }),
            // Stops accepting, then lets in-flight requests finish within the timeout.
            LifecycleService("HTTP server", start: { try server.start() }, stop: { server.shutdown(timeout: $0) }),
            LifecycleService("rules watcher", start: { rulesWatcher.start() }, stop: { _ in rulesWatcher.stop() }),
            // Stopped first, so no round of recent hours starts a read while requests drain.
            LifecycleService(
                "recent backtest hours",
                start: {
                    let rules = context.rules
                    context.backtestPreparation.keepRecent(
                        hours: configuration.console.backtestKeepRecentHours,
                        limit: RulesBacktestRequest.maximumAttempts, current: { rules.current }, clock: context.clock)
                }, stop: { context.backtestPreparation.stopRecentRounds(timeout: $0) }),
        ]
    }

    /// Starts ``services`` in order: pending migrations applied (when configured), the background
    /// workers, then the listening socket. When one fails, those started are stopped in reverse.
    ///
    /// - Throws: ``PostgresError`` when migrations cannot run, ``MigrationError`` when an applied
    ///   migration's file changed, ``HTTPServerError`` when the socket cannot be bound.
    public func start() throws {
        let services = services
        for (index, service) in services.enumerated() {
            do {
                try service.start()
            } catch {
                for started in services[..<index].reversed() where started.name != "database" {
                    started.stop(.seconds(5))
                }
                throw error
            }
        }
        logger.info("issuerd listening", ["address": "\(configuration.listen)", "port": .int(server.port)])
    }

    /// Applies pending migrations at start; a role refused the DDL (the service role) is told
    /// to leave that to `issuerd migrate` as the owner.
    private static func migrate(
        configuration: IssuerdConfiguration, database: PostgresPool, logger: Logger
    ) throws -> [AppliedMigration] {
        do {
            return try Migrator(
                directory: URL(fileURLWithPath: configuration.sqlDirectory), logger: logger.labelled("issuerd.migrate")
            )
            .migrate(using: database)
        } catch var error as PostgresError where error.sqlState == "42501" {
            error.message +=
                "; migrations are pending and this role may not apply them: run issuerd migrate with ISSUERD_MIGRATE_DATABASE_URL (the owner role) first"
            throw error
        }
    }

    /// One warning line when the role serving holds more than serving needs (owns tables, may
    /// run DDL or edit the audit log): what `issuerd db grant` gives a service role is the bar.
    private static func reportExcessPrivileges(database: PostgresPool, logger: Logger) {
        guard
            let (role, excess) = try? database.withConnection({ connection in
                (
                    try connection.query("SELECT current_user AS me").first?.decode("me", as: String.self) ?? "?",
                    try ServiceRole.excess(on: connection)
                )
            }), !excess.isEmpty
        else { return }
        logger.warning(
            "database role \(role) holds more than serving needs: \(excess.joined(separator: "; ")); "
                + "serve as a role set up by issuerd db grant (docs/configuration.md, Database roles)",
            ["role": .string(role)])
    }

    /// Reloads what can change without a restart (SIGHUP).
    public func reload() {
        context.rules.reload(trigger: "SIGHUP")
    }

    /// Stops ``services`` in reverse order: nothing new is read or accepted, in-flight requests
    /// finish (at most `timeout`), the workers end, and the pool closes last.
    public func shutdown(timeout: Duration = .seconds(5)) {
        for service in services.reversed() { service.stop(timeout) }
        logger.info("issuerd stopped")
    }

    private static func rulesProbe(_ rules: RulesService) -> Readiness.Probe {
        {
            let status = rules.active.status
            // A failed reload does not make the instance unready (the last good ruleset serves),
            // but it is reported here so nobody misses it. Only that it failed: /readyz is public
            // (deploy/nginx.conf), and the rule files' diagnostics are for GET /v1/admin/rules.
            let detail = status.lastFailure.map { "last reload failed at \($0.time); details in GET /v1/admin/rules" }
            return .init(
                name: "rules", ok: status.lastFailure == nil, critical: false,
                detail: detail ?? "version \(status.version)")
        }
    }

    /// The Customer Service API's OAuth signing key: PEM, or a label in the HSM.
    private static func customerServiceSigner(
        _ settings: MDESCustomerServiceSettings, hsm: HSMKeyStore?
    ) throws -> any RSASigningKey {
        switch settings.signingKey {
        case .pem(let pem):
            do {
                return try RSA.Signing.PrivateKey(pemRepresentation: pem.unsafeValue)
            } catch {
                throw ConfigurationError(
                    key: "ISSUERD_MDES_SIGNING_KEY", problem: "must be an RSA private key of at least 2048 bits in PEM")
            }
        case .hsm(let label):
            guard let hsm else {
                throw ConfigurationError(key: "ISSUERD_MDES_SIGNING_KEY_LABEL", problem: "needs ISSUERD_PKCS11_MODULE")
            }
            return try hsm.rsaSigner(label: label, setting: "ISSUERD_MDES_SIGNING_KEY_LABEL")
        }
    }

    /// The token is present and answers; not critical: PANs open from memory, only Mastercard
    /// TAVs signed in the HSM fail (500) while it is away, and sessions re-open when it is back.
    private static func hsmProbe(_ hsm: HSMKeyStore) -> Readiness.Probe {
        let token = hsm.token
        return {
            do {
                let info = try token.info
                return .init(
                    name: "hsm", ok: true, critical: false,
                    detail: "token '\(info.label)', sessions re-opened \(token.sessionsReopened)")
            } catch {
                return .init(name: "hsm", ok: false, critical: false, detail: "token '\(token.label)' does not answer")
            }
        }
    }

    /// Ready when the database answers and, after a statement failed for want of disk or memory
    /// (SQLSTATE class 53: `SELECT 1` still answers on a full disk), once a write that needs new
    /// space succeeds again (``PostgresPool/probeWrite()``); so an instance the database cannot
    /// write for is taken out of the balancer, and comes back by itself when it can.
    private static func databaseProbe(_ database: PostgresPool) -> Readiness.Probe {
        {
            do {
                try database.ping()
                if database.lastResourceFailure != nil { try database.probeWrite() }
                return .init(name: "database", ok: true, critical: true, detail: nil)
            } catch let error as PostgresError {
                return .init(name: "database", ok: false, critical: true, detail: "\(error.code)")
            } catch {
                return .init(name: "database", ok: false, critical: true, detail: "unexpected error")
            }
        }
    }
}

/// One part of the running instance, as ``IssuerdApplication`` starts and stops it.
struct LifecycleService: Sendable {
    let name: String
    let start: @Sendable () throws -> Void
    let stop: @Sendable (Duration) -> Void

    init(_ name: String, start: @escaping @Sendable () throws -> Void, stop: @escaping @Sendable (Duration) -> Void) {
        self.name = name
        self.start = start
        self.stop = stop
    }
}
