import Foundation
import IssuerdCore
import IssuerdPostgres
import IssuerdStorage

/// `issuerd db grant`: gives the service role exactly what serving needs, as the owner.
enum DatabaseCommand: CommandDefinition {
    static let name = "db"
    static let summary = "give the service role what serving needs, as the owner (db grant --role NAME)"
    static let usage = """
        issuerd db grant --role NAME

        Run as the role that owns the tables (the one `issuerd migrate` uses), after migrating.
        Gives role NAME, which must exist and own nothing, exactly what `issuerd serve` and the
        operator commands need: read and write every table of schema public but never truncate
        one; use its sequences; make temporary tables; read the migrations record; append to
        and read the audit log and set the chain columns its sealer fills in (its trigger
        refuses every other change). Anything more NAME had on those tables is taken back, and
        the tables the owner creates later (the next release's migrations) come with the same
        rights. Prints the statements it ran.

        Environment:
          ISSUERD_MIGRATE_DATABASE_URL   the owner role's libpq URI or conninfo
          ISSUERD_DATABASE_URL           used when ISSUERD_MIGRATE_DATABASE_URL is not set
        """

    static func run(_ words: [String]) throws -> Int32 {
        try runSubcommand(words, ["grant": grant])
    }

    private static func grant(_ words: [String]) throws -> Int32 {
        let arguments = try Arguments(words, options: ["role"])
        if arguments.wantsHelp {
            print(usage)
            return 0
        }
        if let extra = arguments.positionals.first { throw UsageError("unexpected argument '\(extra)'") }
        guard let role = arguments.option("role"), !role.isEmpty else {
            throw UsageError("--role NAME is required (the service role, e.g. issuerd)")
        }
        let url = try MigrateCommand.ownerDatabaseURL()
        do {
            let connection = try PostgresConnection(connectionString: url)
            for statement in try ServiceRole.grant(role: role, on: connection) { print(statement) }
            print("role \(role) has what serving needs")
            return 0
        } catch let error as ServiceRoleError {
            throw CommandFailure(error.description)
        } catch let error as PostgresError {
            throw CommandFailure(error.message + (error.sqlState.map { " (SQLSTATE \($0))" } ?? ""))
        }
    }
}
