import Foundation
import IssuerdPostgres

/// The database role `issuerd serve` connects as: what `issuerd db grant` gives it, and what
/// `serve` reports at start when its role holds more (docs/configuration.md, "Database roles").
///
/// Serving needs to read and write the tables of schema `public` (never truncate them), use
/// their sequences, make temporary tables (a card import's work table, the disk probe) and read
/// which migrations are applied. The audit log is the exception: the service inserts entries
/// and reads them, and may set the three chain columns (`seq`, `prev_hash`, `hash`) that the
/// sealer fills in; its trigger lets that happen once per unsealed entry and refuses every
/// other change. Owning a table would let the role disable that trigger, so it owns nothing.
public enum ServiceRole {
    /// The table the service appends to and seals, never edits.
    static let auditTable = "audit_log"
    /// Where the audit chain left the table (archived segments' anchors): read, never written.
    static let auditArchivesTable = "audit_log_archives"
    /// The audit log's columns the sealer sets.
    static let auditChainColumns = ["seq", "prev_hash", "hash"]
    /// The migrations record, read at start, written only by `issuerd migrate`.
    static let migrationsTable = "issuerd_schema_migrations"

    /// Gives `role` exactly what serving needs on the connected database, and the same on the
    /// tables and sequences the connected role creates later (the next release's migrations),
    /// taking back anything more it had been given on them. Runs in one transaction.
    ///
    /// - Parameters:
    ///   - role: An existing role other than the connected one.
    ///   - connection: A connection as the role that owns the tables (the migrations' role).
    /// - Returns: The statements run, in order.
    /// - Throws: ``ServiceRoleError`` for a bad or missing role, or a schema not migrated yet;
    ///   ``PostgresError`` when the connected role may not grant (it does not own the tables).
    @discardableResult
    public static func grant(role: String, on connection: PostgresConnection) throws -> [String] {
        guard role.range(of: #"^[A-Za-z_][A-Za-z0-9_]{0,62}$"#, options: .regularExpression) != nil else {
            throw ServiceRoleError("'\(role)' is not a plain role name (letters, digits, _; at most 63)")
        }
        let facts = try connection.query(
            """
            SELECT current_user AS me, current_database() AS db,
                   EXISTS (SELECT 1 FROM pg_roles WHERE rolname = \(role)) AS present,
                   to_regclass('public.audit_log') IS NOT NULL AS migrated,
                   to_regclass('public.issuerd_schema_migrations') IS NOT NULL AS recorded,
                   to_regclass('public.audit_log_archives') IS NOT NULL AS anchored
            """
        ).first
        guard let facts, try facts.decode("present", as: Bool.self) else {
            throw ServiceRoleError("role \(role) does not exist; create it first (CREATE ROLE \(role) LOGIN)")
        }
        guard try facts.decode("me", as: String.self) != role else {
            throw ServiceRoleError(
                "role \(role) is the role this connection uses; run db grant as the owner (ISSUERD_MIGRATE_DATABASE_URL) and name the service role"
            )
        }
        guard try facts.decode("migrated", as: Bool.self), try facts.decode("recorded", as: Bool.self) else {
            throw ServiceRoleError("the database has no issuerd schema yet; run issuerd migrate first")
        }
        let database = try facts.decode("db", as: String.self)
        let grantee = quoted(role)
        var statements = [
            "GRANT CONNECT, TEMPORARY ON DATABASE \(quoted(database)) TO \(grantee)",
            "GRANT USAGE ON SCHEMA public TO \(grantee)",
            // Taken back first, so running it again removes whatever was given by hand.
            "REVOKE ALL ON ALL TABLES IN SCHEMA public FROM \(grantee)",
            "REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM \(grantee)",
            "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO \(grantee)",
            "GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO \(grantee)",
            "REVOKE INSERT, UPDATE, DELETE ON \(migrationsTable) FROM \(grantee)",
            "REVOKE UPDATE, DELETE ON \(auditTable) FROM \(grantee)",
            "GRANT UPDATE (\(auditChainColumns.joined(separator: ", "))) ON \(auditTable) TO \(grantee)",
            // The tables and sequences later migrations create (as this role) come readable and
            // writable; a migration adding another append-only table revokes what it must.
            "ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO \(grantee)",
            "ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO \(grantee)",
        ]
        if try facts.decode("anchored", as: Bool.self) {
            // The audit archive's anchors: read by the sealer, written only by the owner's archive run.
            statements.insert(
                "REVOKE INSERT, UPDATE, DELETE ON \(auditArchivesTable) FROM \(grantee)", at: statements.count - 2)
        }
        try connection.transaction { connection in
            for statement in statements { try connection.execute(unsafeSQL: statement) }
        }
        return statements
    }

    /// What the connected role holds beyond what serving needs, one short phrase each; empty for
    /// a role set up by ``grant(role:on:)``.
    ///
    /// - Throws: ``PostgresError`` when the catalogs cannot be read.
    public static func excess(on connection: PostgresConnection) throws -> [String] {
        guard
            let row = try connection.query(
                """
                SELECT r.rolsuper AS superuser, r.rolcreaterole AS createrole, r.rolcreatedb AS createdb,
                       r.rolbypassrls AS bypassrls, r.rolreplication AS replication,
                       (SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                         WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'S', 'v', 'm', 'f')
                           AND pg_has_role(c.relowner, 'USAGE'))::int8 AS owned,
                       has_schema_privilege('public', 'CREATE') AS create_in_schema,
                       has_database_privilege(current_database(), 'CREATE') AS create_in_database,
                       (SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                         WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')
                           AND (has_table_privilege(c.oid, 'TRUNCATE') OR has_table_privilege(c.oid, 'TRIGGER')
                                OR has_table_privilege(c.oid, 'REFERENCES')))::int8 AS truncatable,
                       coalesce(to_regclass('public.audit_log') IS NOT NULL
                         AND (has_table_privilege('public.audit_log', 'DELETE')
                              OR has_any_column_privilege('public.audit_log', 'UPDATE')
                                 AND (has_column_privilege('public.audit_log', 'details', 'UPDATE')
                                      OR has_column_privilege('public.audit_log', 'actor', 'UPDATE')
                                      OR has_column_privilege('public.audit_log', 'action', 'UPDATE')
                                      OR has_column_privilege('public.audit_log', 'subject', 'UPDATE')
                                      OR has_column_privilege('public.audit_log', 'at_ms', 'UPDATE'))), false) AS audit_editable,
                       coalesce(to_regclass('public.issuerd_schema_migrations') IS NOT NULL
                         AND (has_table_privilege('public.issuerd_schema_migrations', 'INSERT')
                              OR has_table_privilege('public.issuerd_schema_migrations', 'UPDATE')
                              OR has_table_privilege('public.issuerd_schema_migrations', 'DELETE')), false) AS migrations_writable,
                       coalesce(to_regclass('public.audit_log_archives') IS NOT NULL
                         AND (has_table_privilege('public.audit_log_archives', 'INSERT')
                              OR has_table_privilege('public.audit_log_archives', 'UPDATE')
                              OR has_table_privilege('public.audit_log_archives', 'DELETE')), false) AS anchors_writable
                FROM pg_roles r WHERE r.rolname = current_user
                """
            ).first
        else { return [] }
        var excess: [String] = []
        if try row.decode("superuser", as: Bool.self) { excess.append("is a superuser") }
        for (column, phrase) in [
            ("createrole", "may create roles"), ("createdb", "may create databases"),
            ("bypassrls", "bypasses row security"), ("replication", "may replicate"),
        ] where try row.decode(column, as: Bool.self) {
            excess.append(phrase)
        }
        let owned = try row.decode("owned", as: Int64.self)
        if owned > 0 { excess.append("owns \(owned) tables or sequences (and so may disable the audit trigger)") }
        if try row.decode("create_in_schema", as: Bool.self) { excess.append("may create objects in schema public") }
        if try row.decode("create_in_database", as: Bool.self) { excess.append("may create schemas") }
        let truncatable = try row.decode("truncatable", as: Int64.self)
        if truncatable > 0 { excess.append("may truncate, reference or add triggers to \(truncatable) tables") }
        if try row.decode("audit_editable", as: Bool.self) { excess.append("may edit or delete audit_log entries") }
        if try row.decode("migrations_writable", as: Bool.self) { excess.append("may write the migrations record") }
        if try row.decode("anchors_writable", as: Bool.self) { excess.append("may write audit_log_archives") }
        return excess
    }

    /// `name` as a double-quoted SQL identifier.
    static func quoted(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}

/// `issuerd db grant` cannot run as asked; the message says why and what to do.
public struct ServiceRoleError: Error, CustomStringConvertible {
    /// What is wrong, in one line.
    public let description: String

    init(_ description: String) { self.description = description }
}
