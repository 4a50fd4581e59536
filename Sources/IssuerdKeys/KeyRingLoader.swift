import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdPostgres
import IssuerdStorage

/// Builds the ``PANVault`` every service and operator command uses, from environment master
/// keys, HSM-wrapped data keys, or both during the move from one to the other.
///
/// With an HSM, the data keys stored in `hsm_data_keys` are unwrapped once here, so a
/// provisioning request opens a PAN without any HSM round trip. A version present both in the
/// environment and in the table must be the same key (compared in constant time): the move to
/// an HSM imports the environment keys under their own versions, so sealed rows and PAN
/// fingerprints keep opening and matching.
public enum KeyRingLoader {
    /// The vault for these settings.
    ///
    /// - Throws: ``ConfigurationError`` naming the setting at fault: no keys at all, a stored
    ///   key that does not unwrap, a version that differs between environment and HSM.
    public static func vault(
        masterKeys: [MasterKeySetting], hsm: HSMKeyStore?, database: PostgresPool
    ) throws -> PANVault {
        var keys: [Int: SymmetricKey] = [:]
        for setting in masterKeys { keys[setting.version] = try SymmetricKey(bytes: setting.key.unsafeValue) }
        if let hsm {
            try hsm.checkWrappingKey()
            let stored: [HSMDataKey]
            do {
                stored = try database.withConnection { try HSMDataKey.all(connection: $0) }
            } catch let error as PostgresError where error.sqlState == "42P01" {
                throw ConfigurationError(
                    key: "ISSUERD_PKCS11_MODULE",
                    problem: "the database lacks the hsm_data_keys table: run issuerd migrate")
            }
            if stored.isEmpty && masterKeys.isEmpty {
                throw ConfigurationError(
                    key: "ISSUERD_PKCS11_WRAP_KEY_LABEL",
                    problem:
                        "PostgreSQL holds no HSM data keys and ISSUERD_MASTER_KEY is unset: run issuerd keys hsm add-data-key (docs/runbook.md)"
                )
            }
            guard stored.count <= MasterKeyRing.maximumVersions else {
                throw ConfigurationError(
                    key: "ISSUERD_PKCS11_WRAP_KEY_LABEL",
                    problem: "more than \(MasterKeyRing.maximumVersions) data keys are stored")
            }
            for row in stored {
                let key: SymmetricKey
                do {
                    key = try hsm.unwrap(row)
                } catch let error as CommandInputError {
                    throw ConfigurationError(key: "ISSUERD_PKCS11_WRAP_KEY_LABEL", problem: error.description)
                }
                if let environment = keys[row.version] {
                    guard environment == key else {
                        throw ConfigurationError(
                            key: "ISSUERD_MASTER_KEY",
                            problem:
                                "version \(row.version) differs from the HSM data key of the same version; keep the key that sealed the stored rows and check hsm_data_keys before removing anything"
                        )
                    }
                }
                keys[row.version] = key
            }
        }
        do {
            return PANVault(keyRing: try MasterKeyRing(keys: keys))
        } catch {
            throw ConfigurationError(key: "ISSUERD_MASTER_KEY", problem: "cannot build the key ring")
        }
    }
}

/// `issuerd keys hsm add-data-key`: stores a new HSM-generated data key, or imports the
/// environment master keys under their versions.
public enum HSMDataKeyProvisioning {
    /// What a run stored.
    public struct Summary: Sendable, Equatable {
        /// Versions stored by this run.
        public var added: [Int]
        /// Environment versions already stored with the same key (nothing to do).
        public var alreadyPresent: [Int]
    }

    /// Generates a data key in the HSM under the next version (one above every stored and
    /// environment version), wraps it and stores it.
    public static func addGenerated(
        hsm: HSMKeyStore, masterKeys: [MasterKeySetting], database: PostgresPool, actor: String, now: Date = Date()
    ) throws -> Summary {
        try hsm.checkWrappingKey()
        let wrapped = try hsm.wrapNewDataKey()
        return try database.transaction { connection in
            // One writer at a time picks the next version.
            try connection.execute("SELECT pg_advisory_xact_lock(\(Int64(0x6873_6D64_656B)))")
            let stored = try HSMDataKey.all(connection: connection)
            // Versions already sealing rows count too: run without the environment key that
            // sealed them, a new key must not take their number (the rows would stop opening).
            let sealed =
                try connection.query(
                    "SELECT greatest((SELECT max(pan_key_version) FROM cards), (SELECT max(key_version) FROM challenges)) AS v"
                ).first?.decode("v", as: Int?.self) ?? nil
            let highest = max(stored.map(\.version).max() ?? 0, masterKeys.map(\.version).max() ?? 0, sealed ?? 0)
            guard stored.count < MasterKeyRing.maximumVersions, highest < 9999 else {
                throw CommandInputError(
                    "no room for another data key version (at most \(MasterKeyRing.maximumVersions) stored, versions up to 9999)"
                )
            }
            let key = HSMDataKey(
                version: highest + 1, wrappedKey: wrapped, wrappingKeyLabel: hsm.settings.wrappingKeyLabel,
                origin: "generated", createdAt: now)
            guard try HSMDataKey.insert(key, actor: actor, connection: connection) else {
                throw CommandInputError("data key version \(key.version) appeared meanwhile; run the command again")
            }
            try AuditLog.append(
                actor: actor, action: "keys.hsm.data_key_added", subject: "hsm_data_keys",
                details: ["version": String(key.version), "origin": "generated", "wrappingKey": key.wrappingKeyLabel],
                at: now, connection: connection)
            return Summary(added: [key.version], alreadyPresent: [])
        }
    }

    /// Wraps every `ISSUERD_MASTER_KEY` version in the HSM and stores it under the same version,
    /// so rows sealed with it and fingerprints made with it keep working once the environment
    /// key is removed. A version stored already must unwrap to the same key.
    public static func importEnvironment(
        hsm: HSMKeyStore, masterKeys: [MasterKeySetting], database: PostgresPool, actor: String, now: Date = Date()
    ) throws -> Summary {
        guard !masterKeys.isEmpty else {
            throw CommandInputError(
                "--import-master-key needs ISSUERD_MASTER_KEY (and ISSUERD_MASTER_KEY_PREVIOUS) set")
        }
        try hsm.checkWrappingKey()
        var summary = Summary(added: [], alreadyPresent: [])
        for setting in masterKeys.sorted(by: { $0.version < $1.version }) {
            let wrapped = try hsm.wrap(setting)
            try database.transaction { connection in
                try connection.execute("SELECT pg_advisory_xact_lock(\(Int64(0x6873_6D64_656B)))")
                if let existing = try HSMDataKey.all(connection: connection).first(where: {
                    $0.version == setting.version
                }) {
                    guard try hsm.unwrap(existing) == SymmetricKey(bytes: setting.key.unsafeValue) else {
                        throw CommandInputError(
                            "version \(setting.version) is stored already with a different key; nothing imported for it"
                        )
                    }
                    summary.alreadyPresent.append(setting.version)
                    return
                }
                let key = HSMDataKey(
                    version: setting.version, wrappedKey: wrapped, wrappingKeyLabel: hsm.settings.wrappingKeyLabel,
                    origin: "imported", createdAt: now)
                _ = try HSMDataKey.insert(key, actor: actor, connection: connection)
                try AuditLog.append(
                    actor: actor, action: "keys.hsm.data_key_added", subject: "hsm_data_keys",
                    details: [
                        "version": String(key.version), "origin": "imported", "wrappingKey": key.wrappingKeyLabel,
                    ], at: now, connection: connection)
                summary.added.append(setting.version)
            }
        }
        return summary
    }
}
