import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdPostgres

/// The few settings the operator commands need, each read on its own, so `issuerd audit verify`
/// does not demand the TSP secret that only `serve` uses. Same keys and messages as
/// ``IssuerdConfiguration``.
public enum OperatorSettings {
    /// `ISSUERD_DATABASE_URL`.
    ///
    /// - Throws: ``ConfigurationError`` naming the key when it is unset.
    public static func databaseURL(_ reader: ConfigurationReader) throws -> Redacted<String> {
        Redacted(try reader.required("ISSUERD_DATABASE_URL", hint: "a libpq URI or conninfo, e.g. postgresql:///issuerd"))
    }

    /// The master key ring from `ISSUERD_MASTER_KEY`, `ISSUERD_MASTER_KEY_VERSION` and
    /// `ISSUERD_MASTER_KEY_PREVIOUS`, exactly as `serve` builds it.
    ///
    /// - Throws: ``ConfigurationError`` naming the key at fault.
    public static func vault(_ reader: ConfigurationReader) throws -> PANVault {
        let settings = try MasterKeySetting.read(reader)
        do {
            return PANVault(keyRing: try MasterKeyRing(settings))
        } catch {
            throw ConfigurationError(key: "ISSUERD_MASTER_KEY", problem: "cannot build the key ring")
        }
    }

    /// `ISSUERD_APP_JWT_SECRET`, at least 32 bytes (the HS256 secret of issuer-app tokens).
    ///
    /// - Throws: ``ConfigurationError`` when unset or short.
    public static func appJWTSecret(_ reader: ConfigurationReader) throws -> Redacted<String> {
        let secret = try reader.required("ISSUERD_APP_JWT_SECRET", hint: "the HS256 secret of issuer-app tokens, at least 32 bytes")
        guard secret.utf8.count >= 32 else {
            throw ConfigurationError(key: "ISSUERD_APP_JWT_SECRET", problem: "must be at least 32 bytes for HS256")
        }
        return Redacted(secret)
    }

    /// A small pool for a command: one connection, a generous wait.
    public static func pool(_ url: Redacted<String>, logger: Logger) -> PostgresPool {
        PostgresPool(
            configuration: PostgresPoolConfiguration(connectionString: url.unsafeValue, size: 1, acquireTimeout: .seconds(30)),
            logger: logger)
    }
}
