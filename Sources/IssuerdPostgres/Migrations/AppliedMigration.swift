import Foundation

/// A row of `issuerd_schema_migrations`: a migration the database has applied.
public struct AppliedMigration: Sendable, Hashable {
    /// The file's version number.
    public let version: Int
    /// The file's name part, e.g. `cards` for `0012_cards.sql`.
    public let name: String
    /// SHA-256 of the file's bytes, lower-case hex.
    public let checksum: String
    /// When it was applied (the server's clock).
    public let appliedAt: Date

    /// The file name the migration came from.
    public var fileName: String {
        let digits = String(version)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits + "_" + name + ".sql"
    }
}

/// Where one migration stands, as reported by ``Migrator/status(using:)``.
public struct MigrationStatus: Sendable, Hashable {
    /// The state of one migration.
    public enum State: Sendable, Hashable {
        /// Applied, and the file is unchanged.
        case applied(at: Date)
        /// The file exists; the database has not applied it yet.
        case pending
        /// Applied, but the file's checksum or name no longer matches what was recorded.
        case changed
        /// Applied, but no file with this version exists any more.
        case missingFile
    }

    /// The version number.
    public let version: Int
    /// The file name (for ``State/missingFile``, the one recorded when it was applied).
    public let fileName: String
    /// Where it stands.
    public let state: State
}
