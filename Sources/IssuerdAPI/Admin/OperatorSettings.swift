import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdKeys
import IssuerdPKCS11
import IssuerdPostgres

/// The few settings the operator commands need, each read on its own, so `issuerd audit verify`
/// does not demand the TSP secret that only `serve` uses. Same keys and messages as
/// ``IssuerdConfiguration``.
public enum OperatorSettings {
    /// `ISSUERD_DATABASE_URL`, with `ISSUERD_DATABASE_PASSWORD` (or its `_FILE` form) as its
    /// password when set.
    ///
    /// - Throws: ``ConfigurationError`` naming the key when it is unset, when the password is
    ///   given twice, or when the connection string's `passfile` is readable by others.
    public static func databaseURL(_ reader: ConfigurationReader) throws -> Redacted<String> {
        let url = try reader.required(
            "ISSUERD_DATABASE_URL", hint: "a libpq URI or conninfo, e.g. postgresql:///issuerd")
        return Redacted(try connectionString(url, key: "ISSUERD_DATABASE_URL", reader: reader))
    }

    /// `url` with the password of `ISSUERD_DATABASE_PASSWORD` added, and its `passfile` (libpq
    /// reads the password from there) refused when its group or others may read it: libpq
    /// itself would only skip such a file with a warning and fail the login.
    static func connectionString(_ url: String, key: String, reader: ConfigurationReader) throws -> String {
        let password = reader.string("ISSUERD_DATABASE_PASSWORD")
        guard let parsed = try? PostgresConnectionString(url) else {
            guard password == nil else {
                throw ConfigurationError(key: key, problem: "is not a valid libpq URI or conninfo")
            }
            return url  // refused with libpq's own reason at the first connection
        }
        if let passfile = parsed["passfile"] { try ConfigurationReader.refuseSharedFile(passfile, key: key) }
        guard let password else { return url }
        guard parsed["password"] == nil else {
            throw ConfigurationError(
                key: "ISSUERD_DATABASE_PASSWORD", problem: "is set and \(key) holds a password too; keep only one")
        }
        return parsed.setting("password", to: password).unsafeConnectionString
    }

    /// The master key ring from `ISSUERD_MASTER_KEY`, `ISSUERD_MASTER_KEY_VERSION` and
    /// `ISSUERD_MASTER_KEY_PREVIOUS`, and with `ISSUERD_PKCS11_MODULE` the HSM-wrapped data keys
    /// stored in PostgreSQL, exactly as `serve` builds it.
    ///
    /// - Throws: ``ConfigurationError`` naming the key at fault.
    public static func vault(_ reader: ConfigurationReader) throws -> PANVault {
        if let hsm = try HSMSettings.read(reader, defaultSessions: 2) {
            let settings = try MasterKeySetting.read(reader, optional: true)
            let store = try HSMKeyStore.open(hsm)
            let database = pool(
                try databaseURL(reader),
                logger: Logger(label: "issuerd.cli", minimumLevel: .warning, handler: JSONLogHandler.standardError))
            defer { database.close() }
            return try KeyRingLoader.vault(masterKeys: settings, hsm: store, database: database)
        }
        let settings = try MasterKeySetting.read(reader)
        do {
            return PANVault(keyRing: try MasterKeyRing(settings))
        } catch {
            throw ConfigurationError(key: "ISSUERD_MASTER_KEY", problem: "cannot build the key ring")
        }
    }

    /// The master key settings and the opened HSM (nil without `ISSUERD_PKCS11_MODULE`), for
    /// `issuerd keys hsm`.
    ///
    /// - Throws: ``ConfigurationError`` naming the setting at fault.
    /// - Parameter pin: A PIN read from standard input instead of `ISSUERD_PKCS11_PIN_FILE`.
    public static func hsm(
        _ reader: ConfigurationReader, pin: PKCS11PIN? = nil
    ) throws -> (store: HSMKeyStore, masterKeys: [MasterKeySetting]) {
        guard let settings = try HSMSettings.read(reader, defaultSessions: 2, pinFileRequired: pin == nil) else {
            throw ConfigurationError(
                key: "ISSUERD_PKCS11_MODULE", problem: "is required (the absolute path of the HSM's PKCS#11 module)")
        }
        let masterKeys = try MasterKeySetting.read(reader, optional: true)
        return (try HSMKeyStore.open(settings, pin: pin), masterKeys)
    }

    /// `ISSUERD_APP_JWT_SECRET`, at least 32 bytes (the HS256 secret of issuer-app tokens).
    ///
    /// - Throws: ``ConfigurationError`` when unset or short.
    public static func appJWTSecret(_ reader: ConfigurationReader) throws -> Redacted<String> {
        let secret = try reader.required(
            "ISSUERD_APP_JWT_SECRET", hint: "the HS256 secret of issuer-app tokens, at least 32 bytes")
        guard secret.utf8.count >= 32 else {
            throw ConfigurationError(key: "ISSUERD_APP_JWT_SECRET", problem: "must be at least 32 bytes for HS256")
        }
        return Redacted(secret)
    }

    /// A small pool for a command: one connection (or `size`), a generous wait.
    public static func pool(_ url: Redacted<String>, size: Int = 1, logger: Logger) -> PostgresPool {
        PostgresPool(
            configuration: PostgresPoolConfiguration(
                connectionString: url.unsafeValue, size: size, acquireTimeout: .seconds(30)),
            logger: logger)
    }
}
