import Foundation
import IssuerdCore
import IssuerdHistory
import IssuerdPostgres
import IssuerdTestSupport
import Synchronization
import Testing

/// provisioning_attempts by month (sql/0037): months made ahead, an insert never refused, a
/// backtest's window reading only its months, and a live table moved without holding writes.
@Suite("Attempt partitions: monthly, made ahead, pruned, migrated live")
struct AttemptPartitionTests {
    static let utc: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar
    }()

    static func monthStart(_ date: Date, plus months: Int = 0) -> Date {
        let start = utc.date(from: utc.dateComponents([.year, .month], from: date))!
        return utc.date(byAdding: .month, value: months, to: start)!
    }

    static func iso(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }

    static func name(_ month: Date) -> String {
        let parts = utc.dateComponents([.year, .month], from: month)
        return String(format: "provisioning_attempts_%04d_%02d", parts.year!, parts.month!)
    }

    /// Inserts one attempt at `time` and returns the partition that took it.
    @discardableResult
    static func insert(at time: Date, device: String = "d1", connection: PostgresConnection) throws -> String {
        try connection.query(
            """
            INSERT INTO provisioning_attempts (attempt_id, channel, device_id, inputs, features, hits, flow,
                                               decision, ruleset_version, created_at)
            VALUES (\(UUID()), 'tsp', \(device), '{}', '{}', '[]', 'green', 'APPROVED', 'sha256:test', \(time))
            RETURNING tableoid::regclass::text AS part
            """
        )[0].decode("part", as: String.self)
    }

    @Test("Migrating makes the last month through three months ahead; a later round makes the next ones once")
    func madeAhead() throws {
        let app = try MigratedDatabase()
        let now = Date()
        try app.pool.withConnection { connection in
            let names = Set(try AttemptPartitions.list(on: connection).map(\.name))
            for months in -1...3 { #expect(names.contains(Self.name(Self.monthStart(now, plus: months))), "\(months)") }
            #expect(names.contains("provisioning_attempts_default"))
            #expect(!names.contains(Self.name(Self.monthStart(now, plus: 4))))

            // Four months on, the keeper's round makes the months up to seven ahead of today.
            let later = Self.monthStart(now, plus: 4).addingTimeInterval(86_400)
            #expect(try AttemptPartitions.makeAhead(on: connection, now: later) == 4)
            #expect(try AttemptPartitions.makeAhead(on: connection, now: later) == 0)
            let after = Set(try AttemptPartitions.list(on: connection).map(\.name))
            #expect(after.contains(Self.name(Self.monthStart(now, plus: 7))))
        }
    }

    @Test(
        "An insert at a month's last microsecond and its next month's first lands in each month; past the months made, in the default"
    )
    func monthBoundary() throws {
        let app = try MigratedDatabase()
        let next = Self.monthStart(Date(), plus: 2)
        try app.pool.withConnection { connection in
            let before = try Self.insert(at: next.addingTimeInterval(-0.000_001), connection: connection)
            let at = try Self.insert(at: next, connection: connection)
            #expect(before == Self.name(Self.monthStart(Date(), plus: 1)))
            #expect(at == Self.name(next))

            // Far beyond the months made: taken by the default partition, never refused; the
            // month's partition made later takes the row over.
            let far = Self.utc.date(from: DateComponents(year: 2100, month: 1, day: 31, hour: 23))!
            #expect(try Self.insert(at: far, connection: connection) == "provisioning_attempts_default")
            #expect(try AttemptPartitions.make(on: connection, since: far, through: far) == 1)
            let moved = try connection.query(
                "SELECT tableoid::regclass::text AS part FROM provisioning_attempts WHERE created_at = \(far)")
            #expect(try moved.map { try $0.decode("part", as: String.self) } == ["provisioning_attempts_2100_01"])
        }
    }

    @Test("A 30-day backtest read scans at most two monthly partitions of a year of history")
    func backtestPrunes() throws {
        let app = try MigratedDatabase()
        let now = Date()
        try app.pool.withConnection { connection in
            try AttemptPartitions.make(on: connection, since: Self.monthStart(now, plus: -12), through: now)
            for day in 0..<365 {
                try Self.insert(
                    at: now.addingTimeInterval(-Double(day) * 86_400 - 60), device: "d\(day % 5)",
                    connection: connection)
            }
            try connection.execute(unsafeSQL: "ANALYZE provisioning_attempts")
            let read = """
                SELECT a.attempt_id, a.created_at, a.card_id, a.device_id, a.inputs FROM provisioning_attempts a
                WHERE a.created_at >= $1 AND a.created_at < $2
                """
            try connection.execute(unsafeSQL: "PREPARE window_read(timestamptz, timestamptz) AS \(read)")
            for mode in ["force_custom_plan", "force_generic_plan"] {
                try connection.execute(unsafeSQL: "SET plan_cache_mode = \(mode)")
                let plan = try connection.query(
                    "EXPLAIN EXECUTE window_read('\(unsafeSQL: Self.iso(now.addingTimeInterval(-30 * 86_400)))', '\(unsafeSQL: Self.iso(now))')"
                ).map { try $0.decode(0, as: String.self) }.joined(separator: "\n")
                let scanned = Set(
                    plan.split(separator: "\n").compactMap { line -> String? in
                        guard let range = line.range(of: " on provisioning_attempts_") else { return nil }
                        return String(line[range.lowerBound...].dropFirst(4).prefix { $0 != " " })
                    })
                #expect((1...2).contains(scanned.count), "\(mode): \(plan)")
                #expect(!scanned.contains("provisioning_attempts_default"), "\(mode): \(plan)")
                let months = [Self.name(Self.monthStart(now)), Self.name(Self.monthStart(now, plus: -1))]
                #expect(scanned.isSubset(of: months), "\(mode): \(plan)")
            }
            try connection.execute(unsafeSQL: "RESET plan_cache_mode; DEALLOCATE ALL")
        }
    }

    @Test("A live unpartitioned table moves: inserts keep succeeding throughout, its indexes are kept, not rebuilt")
    func liveMigration() throws {
        // The schema as it was before partitioning: every migration but the last.
        let sql = MigratedDatabase.repositoryRoot.appendingPathComponent("sql")
        let files = try FileManager.default.contentsOfDirectory(atPath: sql.path).filter { $0.hasSuffix(".sql") }
            .sorted()
        guard let partitioning = files.firstIndex(where: { $0.hasSuffix("_attempt_partitions.sql") }) else {
            Issue.record("no partitioning migration")
            return
        }
        let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("issuerd-parts-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        for file in files[..<partitioning] {
            try FileManager.default.copyItem(
                at: sql.appendingPathComponent(file), to: folder.appendingPathComponent(file))
        }
        let database = try TestDatabase.create()
        defer { database.drop() }
        let pool = database.makePool(size: 4)
        defer { pool.close() }
        let logger = Logger(label: "test", minimumLevel: .critical, handler: DiscardingLogHandler())
        try Migrator(directory: folder, logger: logger).migrate(using: pool)

        // 100,000 attempts over the last five months (the migration's statements scale with it).
        let seeded: Int64 = 100_000
        try pool.withConnection { connection in
            try connection.execute(
                """
                INSERT INTO provisioning_attempts (attempt_id, channel, device_id, inputs, features, hits, flow, decision,
                                                   ruleset_version, created_at)
                SELECT gen_random_uuid(), 'tsp', 'd' || (g % 100), '{"amount": 1}', '{}', '[]', 'green', 'APPROVED',
                       'sha256:test', now() - g * interval '2 minutes'
                FROM generate_series(1, \(seeded)) g
                """)
        }
        let before = try pool.withConnection { connection in
            try connection.query(
                """
                SELECT string_agg(indexrelid::text, ',' ORDER BY indexrelid) AS ids FROM pg_index
                WHERE indrelid = 'provisioning_attempts'::regclass AND indexrelid <> 'provisioning_attempts_pkey'::regclass
                """
            )[0].decode("ids", as: String.self)
        }

        // Writers insert as the request path does while the migration runs.
        struct Tally {
            var inserted: Int64 = 0
            var failures: [String] = []
            var slowest: TimeInterval = 0
        }
        let tally = Lock(Tally())
        let stop = Atomic<Bool>(false)
        let writers = DispatchGroup()
        for writer in 0..<2 {
            writers.enter()
            Thread.detachNewThread {
                defer { writers.leave() }
                while !stop.load(ordering: .relaxed) {
                    let started = Date()
                    do {
                        try pool.withConnection { try Self.insert(at: Date(), device: "w\(writer)", connection: $0) }
                        let took = Date().timeIntervalSince(started)
                        tally.withLock {
                            $0.inserted += 1
                            $0.slowest = max($0.slowest, took)
                        }
                    } catch {
                        tally.withLock { $0.failures.append("\(error)") }
                    }
                }
            }
        }
        // Some inserts before the migration starts, so the writers run across all of it.
        while tally.withLock({ $0.inserted }) < 20 { Thread.sleep(forTimeInterval: 0.01) }
        try FileManager.default.copyItem(
            at: sql.appendingPathComponent(files[partitioning]), to: folder.appendingPathComponent(files[partitioning]))
        let applied = try Migrator(directory: folder, logger: logger).migrate(using: pool)
        let duringMigration = tally.withLock { $0.inserted }
        while tally.withLock({ $0.inserted }) < duringMigration + 20 { Thread.sleep(forTimeInterval: 0.01) }
        stop.store(true, ordering: .relaxed)
        writers.wait()

        let result = tally.withLock { $0 }
        #expect(applied.count == 1)
        #expect(result.failures.isEmpty, "\(result.failures.prefix(3))")
        print("live migration: \(result.inserted) inserts while migrating, slowest \(Int(result.slowest * 1000)) ms")
        try pool.withConnection { connection in
            let row = try connection.query(
                """
                SELECT (SELECT relkind::text FROM pg_class WHERE oid = 'provisioning_attempts'::regclass) AS kind,
                       (SELECT count(*) FROM provisioning_attempts)::int8 AS total,
                       (SELECT count(*) FROM provisioning_attempts_legacy)::int8 AS legacy,
                       (SELECT string_agg(indexrelid::text, ',' ORDER BY indexrelid) FROM pg_index
                         WHERE indrelid = 'provisioning_attempts_legacy'::regclass
                           AND indexrelid <> 'provisioning_attempts_legacy_pkey'::regclass) AS ids
                """)[0]
            #expect(try row.decode("kind", as: String.self) == "p")
            #expect(try row.decode("total", as: Int64.self) == seeded + result.inserted)
            #expect(try row.decode("legacy", as: Int64.self) >= seeded)
            // The same index objects: attached, not built again under the lock.
            #expect(try row.decode("ids", as: String.self) == before)
            let partitions = try AttemptPartitions.list(on: connection).map(\.name)
            #expect(partitions.first == "provisioning_attempts_legacy")
            #expect(partitions.contains(Self.name(Self.monthStart(Date(), plus: 3))))
        }
    }
}
