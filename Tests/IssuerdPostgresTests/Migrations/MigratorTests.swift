import Foundation
import IssuerdCore
import Testing

@testable import IssuerdPostgres

@Suite struct MigratorTests {
    /// A temporary migrations folder holding `files`.
    final class Folder: Sendable {
        let url = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent(
            "issuerd-migrations-\(UUID().uuidString)")

        init(_ files: [String: String]) throws {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            for (name, sql) in files { try write(name, sql) }
        }

        func write(_ name: String, _ sql: String) throws {
            try Data(sql.utf8).write(to: url.appendingPathComponent(name))
        }

        deinit { try? FileManager.default.removeItem(at: url) }
    }

    // Deliberately not idempotent (no IF NOT EXISTS): running one twice would fail.
    static let files = [
        "0001_cards.sql": "CREATE TABLE cards (id int8 PRIMARY KEY, label text NOT NULL);",
        "0002_events.sql":
            "CREATE TABLE events (id int8 PRIMARY KEY, card_id int8 REFERENCES cards (id));\nINSERT INTO cards VALUES (1, '한글 첫 카드');",
        "0010_index.sql": "CREATE INDEX events_card ON events (card_id);",
        "README.md": "not a migration",
    ]

    @Test func appliesInOrderOnceAndIsIdempotent() throws {
        let folder = try Folder(Self.files)
        try withTestPool { pool in
            let migrator = Migrator(directory: folder.url, logger: .silent)
            let first = try migrator.migrate(using: pool)
            #expect(first.map(\.version) == [1, 2, 10])
            #expect(first.map(\.fileName) == ["0001_cards.sql", "0002_events.sql", "0010_index.sql"])
            #expect(first.allSatisfy { $0.checksum.count == 64 })
            #expect(try migrator.migrate(using: pool).isEmpty)

            try folder.write("0011_more.sql", "ALTER TABLE cards ADD COLUMN tries int4 NOT NULL DEFAULT 0;")
            #expect(try migrator.migrate(using: pool).map(\.version) == [11])
            let label = try pool.withConnection {
                try $0.query("SELECT label FROM cards WHERE id = 1")[0].decode("label", as: String.self)
            }
            #expect(label == "한글 첫 카드")
            let states = try migrator.status(using: pool).map(\.state)
            #expect(states.count == 4)
            #expect(states.allSatisfy { if case .applied = $0 { true } else { false } })
        }
    }

    /// A `-- issuerd:no-transaction` file runs a step at a time: `CREATE INDEX CONCURRENTLY`
    /// (refused inside a transaction block) runs, a step whose condition is false is skipped, and
    /// a run stopped by a failing step resumes after the steps it finished.
    @Test func stepwiseFileRunsOutsideOneTransactionAndResumes() throws {
        let failing = """
            -- issuerd:no-transaction
            -- commentary before the first step is not run
            -- issuerd:step
            CREATE TABLE steps (id int8 PRIMARY KEY, note text);
            -- issuerd:step when to_regclass('steps_note') IS NULL
            CREATE INDEX CONCURRENTLY steps_note ON steps (note);
            -- issuerd:step when false
            INSERT INTO steps VALUES (99, 'never');
            -- issuerd:step when NOT EXISTS (SELECT 1 FROM steps WHERE id = 1)
            INSERT INTO steps VALUES (1, 'once');
            SELECT 1 / (SELECT count(*) - 1 FROM steps);
            """
        let folder = try Folder(["0001_steps.sql": "CREATE TABLE before_steps (id int);"])
        try withTestPool { pool in
            let migrator = Migrator(directory: folder.url, logger: .silent)
            try migrator.migrate(using: pool)
            // The first run fails in its last step (a division by zero); that step's insert is
            // rolled back with it, the concurrent index stays, and nothing is recorded.
            try folder.write(
                "0002_steps.sql",
                failing.replacingOccurrences(
                    of: "-- issuerd:step\nCREATE TABLE",
                    with: "-- issuerd:step when to_regclass('steps') IS NULL\nCREATE TABLE"))
            #expect(postgresError { try migrator.migrate(using: pool) }?.message.contains("0002_steps.sql") == true)
            let afterFailure = try pool.withConnection {
                try $0.query(
                    "SELECT to_regclass('steps_note') IS NOT NULL AS indexed, (SELECT count(*) FROM steps)::int8 AS n")[
                        0]
            }
            #expect(try afterFailure.decode("indexed", as: Bool.self))
            #expect(try afterFailure.decode("n", as: Int64.self) == 0)
            #expect(try migrator.status(using: pool).last?.state == .pending)

            // The rerun skips the table and index steps and runs the fixed last step.
            try folder.write(
                "0002_steps.sql",
                failing.replacingOccurrences(
                    of: "-- issuerd:step\nCREATE TABLE",
                    with: "-- issuerd:step when to_regclass('steps') IS NULL\nCREATE TABLE"
                )
                .replacingOccurrences(of: "count(*) - 1", with: "count(*)"))
            #expect(try migrator.migrate(using: pool).map(\.version) == [2])
            let notes = try pool.withConnection {
                try $0.query("SELECT note FROM steps ORDER BY id").map { try $0.decode("note", as: String.self) }
            }
            #expect(notes == ["once"])
            #expect(try migrator.migrate(using: pool).isEmpty)
        }
    }

    /// A step that PostgreSQL ended for a deadlock or a serialization failure had no effect (it
    /// ran alone, or in a transaction of its own), and its `when` or `each` query names only the
    /// work left: it is run again, not the migration failed. Another failure still stops it.
    @Test func stepEndedByADeadlockIsRunAgain() throws {
        let file = """
            -- issuerd:no-transaction
            -- issuerd:step
            CREATE SEQUENCE tries;
            CREATE TABLE done (step text PRIMARY KEY);
            -- issuerd:step when NOT EXISTS (SELECT 1 FROM done WHERE step = 'plain')
            DO $$ BEGIN
                IF nextval('tries') < 3 THEN RAISE EXCEPTION 'a deadlock' USING ERRCODE = 'deadlock_detected'; END IF;
                INSERT INTO done VALUES ('plain');
            END $$;
            -- issuerd:step each
            SELECT $s$DO $d$ BEGIN
                IF nextval('tries') < 5 THEN RAISE EXCEPTION 'a conflict' USING ERRCODE = 'serialization_failure'; END IF;
                INSERT INTO done VALUES ('each');
            END $d$$s$ WHERE NOT EXISTS (SELECT 1 FROM done WHERE step = 'each');
            """
        let folder = try Folder(["0001_retried.sql": file])
        try withTestPool { pool in
            #expect(try Migrator(directory: folder.url, logger: .silent).migrate(using: pool).map(\.version) == [1])
            let row = try pool.withConnection {
                try $0.query(
                    "SELECT (SELECT string_agg(step, ',' ORDER BY step) FROM done) AS steps, nextval('tries') AS next")[
                        0]
            }
            #expect(try row.decode("steps", as: String.self) == "each,plain")
            #expect(try row.decode("next", as: Int64.self) == 6)

            // A step that keeps failing so is not tried for ever: its error names the file.
            try folder.write(
                "0002_stuck.sql",
                """
                -- issuerd:no-transaction
                -- issuerd:step
                DO $$ BEGIN PERFORM nextval('tries'); RAISE EXCEPTION 'stuck' USING ERRCODE = 'deadlock_detected'; END $$;
                """)
            let error = postgresError { try Migrator(directory: folder.url, logger: .silent).migrate(using: pool) }
            #expect(error?.code == .deadlockDetected)
            #expect(error?.message.contains("0002_stuck.sql") == true)
            let tried = try pool.withConnection {
                try $0.query("SELECT nextval('tries') AS n")[0].decode("n", as: Int64.self)
            }
            #expect(tried == 7 + Int64(Migrator.stepAttempts))
        }
    }

    /// `-- issuerd:step each`: the step's query names statements, each run alone outside any
    /// transaction (so `CREATE INDEX CONCURRENTLY` over a list only the database knows), in the
    /// rows' order; a query naming only the work left makes a rerun resume.
    @Test func eachStepRunsTheStatementsItsQueryNames() throws {
        let file = """
            -- issuerd:no-transaction
            -- issuerd:step
            CREATE TABLE parts (id int8, at int8) PARTITION BY RANGE (at);
            CREATE TABLE parts_1 PARTITION OF parts FOR VALUES FROM (0) TO (10);
            CREATE TABLE parts_2 PARTITION OF parts FOR VALUES FROM (10) TO (20);
            CREATE INDEX parts_id ON ONLY parts (id);
            -- issuerd:step each when true
            SELECT format('CREATE INDEX CONCURRENTLY %I ON %I (id)', c.relname || '_id', c.relname)
            FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = 'parts'::regclass AND to_regclass(c.relname || '_id') IS NULL
            ORDER BY c.relname;
            -- issuerd:step each
            SELECT format('ALTER INDEX parts_id ATTACH PARTITION %I', c.relname || '_id')
            FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'parts'::regclass;
            """
        #expect(MigrationStep.steps(of: file)?.map(\.each) == [false, true, true])
        #expect(MigrationStep.steps(of: file)?[1].condition == "true")
        let folder = try Folder(["0001_parts.sql": file])
        try withTestPool { pool in
            #expect(try Migrator(directory: folder.url, logger: .silent).migrate(using: pool).map(\.version) == [1])
            let row = try pool.withConnection {
                try $0.query(
                    """
                    SELECT (SELECT indisvalid FROM pg_index WHERE indexrelid = 'parts_id'::regclass) AS valid,
                           (SELECT count(*) FROM pg_inherits WHERE inhparent = 'parts_id'::regclass)::int8 AS attached
                    """)[0]
            }
            #expect(try row.decode("valid", as: Bool.self))
            #expect(try row.decode("attached", as: Int64.self) == 2)
        }
    }

    @Test func checksumIsTheSHA256OfTheFileBytes() throws {
        let folder = try Folder(["0001_x.sql": "SELECT 1;"])
        try withTestPool { pool in
            let applied = try Migrator(directory: folder.url, logger: .silent).migrate(using: pool)
            // sha256("SELECT 1;") computed independently (coreutils sha256sum).
            #expect(applied.first?.checksum == "17db4fd369edb9244b9f91d9aeed145c3d04ad8ba6e95d06247f07a63527d11a")
        }
    }

    @Test func changedFileIsRefusedAndNamed() throws {
        let folder = try Folder(Self.files)
        try withTestPool { pool in
            let migrator = Migrator(directory: folder.url, logger: .silent)
            try migrator.migrate(using: pool)
            try folder.write("0002_events.sql", "CREATE TABLE events (id int8 PRIMARY KEY); -- edited")
            try folder.write("0020_new.sql", "CREATE TABLE never_applied (id int);")
            let error = postgresError { try migrator.migrate(using: pool) }
            #expect(error?.code == .migration)
            #expect(error?.message.contains("0002_events.sql") == true)
            #expect(error?.message.contains("changed") == true)
            // Nothing new was applied after the refusal.
            let exists = try pool.withConnection {
                try $0.query("SELECT to_regclass('never_applied') IS NOT NULL AS e")[0].decode("e", as: Bool.self)
            }
            #expect(!exists)
            let state = try migrator.status(using: pool).first { $0.version == 2 }?.state
            #expect(state == .changed)
        }
    }

    @Test func reviewedCommentEditIsAcceptedAndNoOtherEdit() throws {
        let folder = try Folder(Self.files)
        try withTestPool { pool in
            let first = try Migrator(directory: folder.url, logger: .silent).migrate(using: pool)
            let earlier = try #require(first.first { $0.version == 2 }?.checksum)
            try folder.write("0002_events.sql", Self.files["0002_events.sql"]! + "\n-- comment reworded")
            try folder.write("0020_new.sql", "CREATE TABLE applied_after_edit (id int);")

            // Without the reviewed checksum the edit is refused, as any edit is.
            let strict = Migrator(directory: folder.url, logger: .silent, reviewedEdits: [:])
            #expect(postgresError { try strict.migrate(using: pool) }?.code == .migration)

            // With it, the database counts as current and the next migration applies.
            let reviewed = Migrator(directory: folder.url, logger: .silent, reviewedEdits: [2: [earlier]])
            #expect(try reviewed.migrate(using: pool).map(\.version) == [20])
            let state = try reviewed.status(using: pool).first { $0.version == 2 }?.state
            #expect(state.map { if case .applied = $0 { true } else { false } } == true)

            // A reviewed checksum for another version does not excuse this one.
            try folder.write("0002_events.sql", Self.files["0002_events.sql"]! + "\n-- edited again")
            let misplaced = Migrator(directory: folder.url, logger: .silent, reviewedEdits: [10: [earlier]])
            #expect(postgresError { try misplaced.migrate(using: pool) }?.message.contains("0002_events.sql") == true)
        }
    }

    @Test func shippedMigrationsMatchTheirReviewedEarlierForms() throws {
        // The real migrations directory: every reviewed entry names a shipped version, and no
        // shipped file's checksum is itself listed (that would be an entry for no edit).
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let folder = root.appendingPathComponent("sql")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        for version in Migrator.reviewedCommentEdits.keys {
            #expect(names.contains { $0.hasPrefix(String(format: "%04d_", version)) })
        }
        try withTestPool { pool in
            let applied = try Migrator(directory: folder, logger: .silent).migrate(using: pool)
            for migration in applied {
                #expect(Migrator.reviewedCommentEdits[migration.version]?.contains(migration.checksum) != true)
            }
        }
    }

    @Test func missingFileOfAnAppliedMigrationIsReported() throws {
        let folder = try Folder(Self.files)
        try withTestPool { pool in
            let migrator = Migrator(directory: folder.url, logger: .silent)
            try migrator.migrate(using: pool)
            try FileManager.default.removeItem(at: folder.url.appendingPathComponent("0010_index.sql"))
            let error = postgresError { try migrator.migrate(using: pool) }
            #expect(error?.code == .migration)
            #expect(error?.message.contains("0010_index.sql") == true)
            #expect(error?.message.contains("missing") == true)
            #expect(try migrator.status(using: pool).last?.state == .missingFile)
        }
    }

    @Test func failingMigrationRollsBackAndNamesTheFile() throws {
        let folder = try Folder([
            "0001_ok.sql": "CREATE TABLE a (id int);", "0002_bad.sql": "CREATE TABLE b (id int); SELEC broken;",
        ])
        try withTestPool { pool in
            let migrator = Migrator(directory: folder.url, logger: .silent)
            let error = postgresError { try migrator.migrate(using: pool) }
            #expect(error?.code == .syntax)
            #expect(error?.message.contains("0002_bad.sql") == true)
            let tables = try pool.withConnection {
                try $0.query("SELECT to_regclass('a') IS NOT NULL AS a, to_regclass('b') IS NOT NULL AS b")[0]
            }
            #expect(try tables.decode("a", as: Bool.self))
            #expect(try !tables.decode("b", as: Bool.self))
            #expect(try migrator.status(using: pool).map(\.state).last == .pending)
        }
    }

    @Test(arguments: ["1_short.sql", "0001-dash.sql", "0001_.sql", "abcd_x.sql", "0001_sp ace.sql"])
    func misnamedSQLFileIsAnError(name: String) throws {
        let folder = try Folder([name: "SELECT 1;"])
        try withTestPool { pool in
            let error = postgresError { try Migrator(directory: folder.url, logger: .silent).migrate(using: pool) }
            #expect(error?.code == .migration)
            #expect(error?.message.contains(name) == true)
        }
    }

    @Test func concurrentMigratorsApplyEachMigrationExactlyOnce() throws {
        let folder = try Folder(Self.files)
        try withTestPool(size: 4) { pool in
            let results = Lock<[[Int]]>([])
            let failures = Lock<[String]>([])
            onThreads(4) { _ in
                do {
                    let applied = try Migrator(directory: folder.url, logger: .silent).migrate(using: pool)
                    results.withLock { $0.append(applied.map(\.version)) }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
            #expect(failures.withLock { $0 } == [])
            let all = results.withLock { $0 }
            #expect(all.count == 4)
            #expect(all.flatMap { $0 }.sorted() == [1, 2, 10])
            let recorded = try pool.withConnection {
                try $0.query("SELECT count(*) AS n FROM issuerd_schema_migrations")[0].decode("n", as: Int.self)
            }
            #expect(recorded == 3)
        }
    }
}
