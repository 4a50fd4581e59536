/// `issuerd migrate`: applies the numbered SQL files in `sql/` (placeholder until the
/// PostgreSQL layer lands).
enum MigrateCommand: CommandDefinition {
    static let name = "migrate"
    static let summary = "apply the SQL migrations in sql/ to ISSUERD_DATABASE_URL"
    static let usage = """
        issuerd migrate [--sql-dir DIR]

        Applies every migration in DIR (default: sql/) that the database has not recorded yet,
        under an advisory lock, and refuses to start if an applied migration's file changed.
        """

    static func run(_ words: [String]) throws -> Int32 {
        let arguments = try Arguments(words, options: ["sql-dir"])
        if arguments.wantsHelp {
            print(usage)
            return 0
        }
        throw CommandFailure("not implemented yet")
    }
}
