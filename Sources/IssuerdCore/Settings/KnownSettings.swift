/// Every `ISSUERD_*` variable some setting reads, so that a misspelt one is named at start
/// instead of silently ignored, and the secrets among them, which also have a `_FILE` form.
///
/// A new setting is added here as well as where it is read (`KnownSettingsTests` compares the
/// list with every `"ISSUERD_…"` name in the sources).
public enum KnownSettings {
    /// Settings whose value is a secret: each may instead be given as `NAME_FILE`, the path of
    /// a file holding it, readable by its owner only (``ConfigurationReader/layered(file:environment:)``).
    public static let secrets: Set<String> = [
        "ISSUERD_MASTER_KEY", "ISSUERD_MASTER_KEY_PREVIOUS", "ISSUERD_TSP_HMAC_SECRET", "ISSUERD_APP_JWT_SECRET",
        "ISSUERD_NOTIFY_WEBHOOK_SECRET", "ISSUERD_DATABASE_PASSWORD", "ISSUERD_TAV_SIGNING_KEY",
        "ISSUERD_GOOGLE_OPC_SIGNING_KEY", "ISSUERD_MDES_SIGNING_KEY", "ISSUERD_SMTP_PASSWORD",
        "ISSUERD_SMPP_PASSWORD",
    ]

    /// Every setting the service and its commands read (secrets included, without their
    /// `_FILE` forms, which ``isKnown(_:)`` accepts too).
    public static let names: Set<String> = secrets.union([
        "ISSUERD_EMAIL_PROVIDER", "ISSUERD_SMTP_URL", "ISSUERD_SMTP_TLS", "ISSUERD_SMTP_USER", "ISSUERD_SMTP_FROM",
        "ISSUERD_SMTP_CA_FILE", "ISSUERD_SMS_PROVIDER", "ISSUERD_SMPP_HOST", "ISSUERD_SMPP_PORT",
        "ISSUERD_SMPP_SYSTEM_ID",
        "ISSUERD_SMPP_SOURCE_ADDR", "ISSUERD_SMPP_WINDOW", "ISSUERD_SMPP_ENQUIRE_LINK_INTERVAL",
        "ISSUERD_ACTIVATION_VALIDITY", "ISSUERD_ADMIN_KEY", "ISSUERD_VISA_ENCRYPTION_API_KEY",
        "ISSUERD_VISA_ENCRYPTION_SHARED_SECRET", "ISSUERD_APPLE_CHECK_VALIDITY", "ISSUERD_APPLE_TRUST",
        "ISSUERD_APP_JWT_AUDIENCE", "ISSUERD_APP_JWT_ISSUER", "ISSUERD_APP_JWT_MAX_LIFETIME",
        "ISSUERD_APP_JWT_PUBLIC_KEY", "ISSUERD_AUDIT_SEAL", "ISSUERD_AUDIT_SEAL_INTERVAL",
        "ISSUERD_BACKTEST_CACHE_ATTEMPTS", "ISSUERD_BACKTEST_KEEP_RECENT_HOURS", "ISSUERD_BODY_LIMIT",
        "ISSUERD_CONSOLE_SECURE_COOKIES", "ISSUERD_CONSOLE_SESSION_TTL", "ISSUERD_CONSOLE_TIME_ZONE",
        "ISSUERD_DATABASE_URL", "ISSUERD_HISTORY_RETENTION", "ISSUERD_IDEMPOTENCY_RETENTION",
        "ISSUERD_READ_DATABASE_URL",
        "ISSUERD_MIGRATE_DATABASE_URL", "ISSUERD_DB_ACQUIRE_TIMEOUT", "ISSUERD_DB_DEAD_PEER_TIMEOUT",
        "ISSUERD_DB_POOL_SIZE", "ISSUERD_READ_DB_POOL_SIZE", "ISSUERD_DB_STATEMENT_TIMEOUT", "ISSUERD_ENABLE_RSA_V2",
        "ISSUERD_GOOGLE_OPC_ENCRYPTION_KEY", "ISSUERD_HTTP_BODY_TIMEOUT", "ISSUERD_HTTP_CONNECTION_MEMORY",
        "ISSUERD_HTTP_HEAD_TIMEOUT", "ISSUERD_HTTP_IDLE_TIMEOUT", "ISSUERD_HTTP_MAX_CONNECTIONS",
        "ISSUERD_HTTP_MAX_CONNECTIONS_PER_ADDRESS", "ISSUERD_HTTP_NETWORK_THREADS", "ISSUERD_HTTP_THREADS",
        "ISSUERD_IAV_MAX_PER_HOUR",
        "ISSUERD_IAV_NOTIFY_TSP", "ISSUERD_LISTEN", "ISSUERD_LOG_LEVEL", "ISSUERD_LOG_REPEAT_INTERVAL",
        "ISSUERD_MASTER_KEY_VERSION", "ISSUERD_MDES_AUDIT_ORGANIZATION", "ISSUERD_MDES_AUDIT_USER_ID",
        "ISSUERD_MDES_AUDIT_USER_NAME", "ISSUERD_MDES_CONSUMER_KEY", "ISSUERD_MDES_CSAPI_URL",
        "ISSUERD_MDES_ISSUER_KEYS", "ISSUERD_MDES_ISSUER_KEY_LABELS", "ISSUERD_MDES_MASTERCARD_CERT",
        "ISSUERD_MDES_MASTERCARD_KEY_FINGERPRINT", "ISSUERD_MDES_SIGNING_KEY_LABEL", "ISSUERD_MIGRATE_ON_START",
        "ISSUERD_NOTIFY_LOCALE", "ISSUERD_NOTIFY_LOG_FILE", "ISSUERD_NOTIFY_PROVIDER", "ISSUERD_NOTIFY_WEBHOOK_URL",
        "ISSUERD_OTP_MAX_ATTEMPTS", "ISSUERD_OTP_MAX_SENDS_PER_CARDHOLDER_PER_HOUR", "ISSUERD_OTP_MAX_SENDS_PER_HOUR",
        "ISSUERD_OTP_TTL", "ISSUERD_OUTBOX_BACKOFF_BASE", "ISSUERD_OUTBOX_BACKOFF_MAX", "ISSUERD_OUTBOX_BATCH_SIZE",
        "ISSUERD_OUTBOX_CONCURRENCY",
        "ISSUERD_OUTBOX_DISPATCH", "ISSUERD_OUTBOX_HTTP_TIMEOUT", "ISSUERD_OUTBOX_LEASE", "ISSUERD_OUTBOX_MAX_ATTEMPTS",
        "ISSUERD_OUTBOX_POLL_INTERVAL", "ISSUERD_OUTCOMES_LABEL_MATURITY", "ISSUERD_OUTCOMES_NETWORK_CONFIRMS",
        "ISSUERD_PKCS11_MODULE", "ISSUERD_PKCS11_PIN_FILE", "ISSUERD_PKCS11_SESSIONS",
        "ISSUERD_PKCS11_SIGNING_KEY_LABEL", "ISSUERD_PKCS11_TOKEN_LABEL", "ISSUERD_PKCS11_WRAP_KEY_LABEL",
        "ISSUERD_RATE_LIMIT_CARD", "ISSUERD_RATE_LIMIT_CUSTOMER", "ISSUERD_REVIEW_STEP_UP_WAIT",
        "ISSUERD_RULES_DIR",
        "ISSUERD_SQL_DIR", "ISSUERD_TRUSTED_PROXIES", "ISSUERD_TSP_ACCOUNT_CERT", "ISSUERD_TSP_WEBHOOK_URL",
        "ISSUERD_VISA_CLIENT_APP_ID",
        "ISSUERD_VISA_ENCRYPTION_KEY_LABEL", "ISSUERD_RULES_APPROVAL", "ISSUERD_RULES_AUTHOR",
    ])

    /// Prefixes of variables that the repository's scripts and tests read, never the service.
    static let scriptPrefixes = [
        "ISSUERD_TEST_", "ISSUERD_BENCH_", "ISSUERD_FUZZ_", "ISSUERD_PEERS_", "ISSUERD_PG_", "ISSUERD_SKIP_",
    ]
    /// Variables of the scripts that no prefix above covers.
    static let scriptNames: Set<String> = [
        "ISSUERD_ROOT", "ISSUERD_BIN", "ISSUERD_DEBIAN_PACKAGES", "ISSUERD_DEV_PG_PORT", "ISSUERD_CONSOLE_IVR_KEY",
        "ISSUERD_CONSOLE_KEY", "ISSUERD_CONSOLE_RULES_DIR", "ISSUERD_CONSOLE_SCREENSHOTS", "ISSUERD_CONSOLE_SERVER_LOG",
        "ISSUERD_CONSOLE_URL", "ISSUERD_CONSOLE_VERSION", "ISSUERD_JWCRYPTO_VERSION", "ISSUERD_MC_ENCRYPTION_VERSION",
        "ISSUERD_MC_OAUTH1_VERSION", "ISSUERD_PGPY_VERSION", "ISSUERD_SCHEMATHESIS_VERSION", "ISSUERD_BUILD_VERSION",
        "ISSUERD_BUILD_COMMIT",
    ]

    /// Whether some setting (or its `_FILE` form), or one of the repository's scripts, reads `name`.
    public static func isKnown(_ name: String) -> Bool {
        if names.contains(name) || scriptNames.contains(name) { return true }
        if name.hasSuffix("_FILE"), secrets.contains(String(name.dropLast(5))) { return true }
        return scriptPrefixes.contains { name.hasPrefix($0) }
    }

    /// The known setting nearest to `name` by edit distance (a misspelling's most likely intent).
    public static func closest(to name: String) -> String {
        let candidates = names.union(secrets.map { $0 + "_FILE" })
        return candidates.min { left, right in
            let (a, b) = (editDistance(name, left), editDistance(name, right))
            return a != b ? a < b : left < right
        } ?? "ISSUERD_DATABASE_URL"
    }

    /// Levenshtein distance over Unicode scalars.
    static func editDistance(_ left: String, _ right: String) -> Int {
        let a = Array(left.unicodeScalars)
        let b = Array(right.unicodeScalars)
        var previous = Array(0...b.count)
        for i in 1...max(a.count, 1) where !a.isEmpty {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in stride(from: 1, through: b.count, by: 1) {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return a.isEmpty ? b.count : previous[b.count]
    }
}
