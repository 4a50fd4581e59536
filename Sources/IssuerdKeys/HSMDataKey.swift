import Foundation
import IssuerdPostgres

/// One row of `hsm_data_keys`: a PAN data key wrapped by the HSM's wrapping key.
public struct HSMDataKey: Sendable, Equatable {
    /// The key version (stored beside every PAN it seals).
    public var version: Int
    /// RFC 3394 AES key wrap of the 32-byte key (40 bytes).
    public var wrappedKey: [UInt8]
    /// The HSM key that wrapped it.
    public var wrappingKeyLabel: String
    /// `generated` in the HSM, or `imported` from `ISSUERD_MASTER_KEY`.
    public var origin: String
    /// When it was stored.
    public var createdAt: Date

    /// Creates the value from every stored property.
    package init(version: Int, wrappedKey: [UInt8], wrappingKeyLabel: String, origin: String, createdAt: Date) {
        self.version = version
        self.wrappedKey = wrappedKey
        self.wrappingKeyLabel = wrappingKeyLabel
        self.origin = origin
        self.createdAt = createdAt
    }

    /// Every stored data key, by ascending version.
    ///
    /// - Throws: ``PostgresError`` (SQLSTATE 42P01 when migration 0014 has not run).
    public static func all(connection: PostgresConnection) throws -> [HSMDataKey] {
        try connection.query(
            "SELECT version, wrapped_key, wrapping_key_label, origin, created_at FROM hsm_data_keys ORDER BY version"
        ).map {
            HSMDataKey(
                version: try $0.decode("version"), wrappedKey: try $0.decode("wrapped_key"),
                wrappingKeyLabel: try $0.decode("wrapping_key_label"),
                origin: try $0.decode("origin"), createdAt: try $0.decode("created_at"))
        }
    }

    /// Stores a wrapped key under `version`; an existing version is never overwritten.
    ///
    /// - Returns: false when the version exists already.
    static func insert(_ key: HSMDataKey, actor: String, connection: PostgresConnection) throws -> Bool {
        try connection.query(
            """
            INSERT INTO hsm_data_keys (version, wrapped_key, wrapping_key_label, origin, created_at, created_by)
            VALUES (\(key.version), \(key.wrappedKey), \(key.wrappingKeyLabel), \(key.origin), \(key.createdAt), \(actor))
            ON CONFLICT (version) DO NOTHING RETURNING version
            """
        ).count == 1
    }
}
