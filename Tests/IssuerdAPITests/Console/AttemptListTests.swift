import Foundation
import IssuerdConsole
import IssuerdHistory
import IssuerdPostgres
import IssuerdTestSupport
import Synchronization
import Testing

@testable import IssuerdAPI

/// `GET /v1/admin/attempts`: each filter, the cursor and the CSV, each compared with a query of
/// the test's own over the same stored attempts (real PostgreSQL, real socket).
@Suite("Attempts list: filters, cursor pages, CSV and bad parameters")
struct AttemptListTests {
    /// The newest seeded attempt's time; attempts are three to a minute before it (ties on time).
    static let end = Date(timeIntervalSince1970: 1_796_000_000)

    /// 90 attempts over 30 minutes: flows, channels, customers, devices and cards in cycles;
    /// yellow ones hit `t.yellow` (live), orange ones `t.orange` and `t.yellow` (live), every
    /// seventh `t.shadow` (shadow, outcome orange), and one a legacy plain-string hit.
    private static func seed(_ app: TestApplication) throws {
        try seed(app.pool)
    }

    /// The 90 attempts with ids from `prefix`, each `shift` seconds after its time above, after
    /// their customers and cards (`people`: the first seeding of a database).
    private static func seed(_ pool: PostgresPool, prefix: String = "list-", shift: Int = 0, people: Bool = true) throws
    {
        try pool.withConnection { connection in
            if people { try seedPeople(connection) }
            try connection.execute(
                """
                INSERT INTO provisioning_attempts (attempt_id, channel, card_id, customer_id, device_id, inputs, features,
                                                   hits, flow, decision, ruleset_version, created_at)
                SELECT md5(\(prefix)::text || i)::uuid, (ARRAY['in_app', 'tsp', 'wallet_extension'])[1 + i % 3],
                       'lcard-' || i % 4, 'lc-' || i % 4, 'ldev-' || i % 6, '{}', '{}',
                       (CASE WHEN i % 5 = 4 THEN '[{"rule":"t.orange","outcome":"orange","mode":"live","values":[]},
                                                  {"rule":"t.yellow","outcome":"yellow","mode":"live","values":[]}]'::jsonb
                             WHEN i % 5 >= 2 THEN '[{"rule":"t.yellow","outcome":"yellow","mode":"live","values":[]}]'::jsonb
                             ELSE '[]'::jsonb END)
                       || CASE WHEN i % 7 = 0 THEN '[{"rule":"t.shadow","outcome":"orange","mode":"shadow"}]'::jsonb
                               ELSE '[]'::jsonb END
                       || CASE WHEN i = 45 THEN '["t.legacy"]'::jsonb ELSE '[]'::jsonb END,
                       CASE WHEN i % 5 = 4 THEN 'orange' WHEN i % 5 >= 2 THEN 'yellow' ELSE 'green' END, 'X', 'v1',
                       \(Self.end) - make_interval(mins => i / 3) + make_interval(secs => \(shift)::float8)
                FROM generate_series(0, 89) i
                """)
        }
    }

    private static func seedPeople(_ connection: PostgresConnection) throws {
        try connection.execute(
            """
            INSERT INTO customers (customer_id, phone_number, email)
            SELECT 'lc-' || i, '+4470000000' || i, 'c' || i || '@example.test' FROM generate_series(0, 3) i
            """)
        try connection.execute(
            """
            INSERT INTO cards (card_id, customer_id, pan_ciphertext, pan_key_version, pan_fingerprint, last_four,
                               expiration, cardholder_name, payment_network, primary_account_identifier, country)
            SELECT 'lcard-' || i, 'lc-' || i, '\\x00'::bytea, 1, sha256(('lcard-' || i)::bytea), '900' || i, '12/30',
                   'Holder ' || i, 'visa', 'lpai-' || i, 'GB'
            FROM generate_series(0, 3) i
            """)
    }

    /// The seeded attempts matching `predicate`, newest first, ties by id, as the list orders them.
    private func expected(_ app: TestApplication, _ predicate: String) throws -> [String] {
        try Self.expected(app.pool, predicate)
    }

    private static func expected(_ pool: PostgresPool, _ predicate: String) throws -> [String] {
        try pool.withConnection { connection in
            try connection.query(
                PostgresQuery(
                    unsafeSQL: """
                        SELECT attempt_id::text AS id FROM provisioning_attempts a WHERE \(predicate)
                        ORDER BY created_at DESC, attempt_id DESC
                        """)
            ).map { try $0.decode("id", as: String.self) }
        }
    }

    /// The test's own predicate for attempts decided by the rule in place of `%@`.
    static let decided = """
        EXISTS (SELECT 1 FROM jsonb_array_elements(a.hits) h WHERE jsonb_typeof(h) = 'object' AND h ->> 'rule' = '%@'
                AND coalesce(h ->> 'mode', 'live') = 'live' AND h ->> 'outcome' = a.flow AND a.flow <> 'green')
        """

    /// The ids of the filter's pages of 7 read directly (``AttemptList/page(_:database:ruleIndexOnly:)``),
    /// at most `pages` of them, and the cursor after the last one read (nil when the list ended).
    private static func walk(
        _ query: [String: String], pool: PostgresPool, ruleIndexOnly: Bool, pages: Int
    ) throws -> (ids: [String], cursor: String?) {
        var walked: [String] = []
        var cursor: String?
        for _ in 0..<pages {
            var parameters = query
            parameters["limit"] = "7"
            parameters["cursor"] = cursor
            let page = try AttemptList.page(
                try AttemptFilter(query: parameters), database: pool, ruleIndexOnly: ruleIndexOnly)
            walked += page.attempts.map(\.attemptId)
            cursor = page.nextCursor
            if cursor == nil { break }
        }
        return (walked, cursor)
    }

    private func list(_ app: TestApplication, _ key: String, _ query: String) throws -> [String: Any] {
        let response = try app.client.get("/v1/admin/attempts?\(query)", headers: AdminFixtures.bearer(key))
        #expect(response.status == 200, "\(query): \(response.text)")
        return response.jsonObject() ?? [:]
    }

    private func ids(_ page: [String: Any]) -> [String] {
        (page["attempts"] as? [[String: Any]] ?? []).compactMap { $0["attemptId"] as? String }
    }

    private static func iso(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        return formatter.string(from: date)
    }

    @Test("Each filter, alone and combined, lists what the test's own query finds")
    func filters() throws {
        let app = try TestApplication()
        try Self.seed(app)
        let key = try app.apiKey(role: .analyst)
        let since = Self.iso(Self.end.addingTimeInterval(-20 * 60))
        let until = Self.iso(Self.end.addingTimeInterval(-5 * 60))
        let decided = Self.decided
        let cases: [(String, String)] = [
            ("", "true"),
            ("flow=orange", "flow = 'orange'"),
            ("flow=green", "flow = 'green'"),
            ("channel=tsp", "channel = 'tsp'"),
            ("rule=t.yellow", #"hits @> '[{"rule":"t.yellow"}]'"#),
            ("rule=t.shadow", #"hits @> '[{"rule":"t.shadow"}]'"#),
            ("rule=t.legacy", #"hits @> '["t.legacy"]'"#),
            ("decidedBy=t.yellow", decided.replacingOccurrences(of: "%@", with: "t.yellow")),
            ("decidedBy=t.orange", decided.replacingOccurrences(of: "%@", with: "t.orange")),
            ("decidedBy=t.shadow", "false"),
            ("rule=t.nothing", "false"),
            ("since=\(since)", "created_at >= '\(since)'"),
            ("until=\(until)", "created_at < '\(until)'"),
            ("since=\(since)&until=\(until)", "created_at >= '\(since)' AND created_at < '\(until)'"),
            ("customerId=lc-2", "customer_id = 'lc-2'"),
            ("deviceId=ldev-5", "device_id = 'ldev-5'"),
            ("q=9001", "card_id = 'lcard-1'"),
            ("q=ldev-3", "device_id = 'ldev-3'"),
            ("q=\(try expected(app, "true")[7])", "attempt_id = '\(try expected(app, "true")[7])'"),
            (
                "flow=yellow&channel=in_app&rule=t.yellow&since=\(since)",
                #"flow = 'yellow' AND channel = 'in_app' AND hits @> '[{"rule":"t.yellow"}]' AND created_at >= '\#(since)'"#
            ),
            (
                "decidedBy=t.yellow&customerId=lc-3&until=\(until)",
                decided.replacingOccurrences(of: "%@", with: "t.yellow")
                    + " AND customer_id = 'lc-3' AND created_at < '\(until)'"
            ),
        ]
        for (query, predicate) in cases {
            let want = try expected(app, predicate)
            let page = try list(app, key, query + (query.isEmpty ? "" : "&") + "limit=200")
            #expect(ids(page) == want, "\(query)")
            #expect(page["nextCursor"] is NSNull, "\(query)")
        }
        let orange = try #require(
            (try list(app, key, "flow=orange&limit=1")["attempts"] as? [[String: Any]])?.first)
        #expect(orange["decidedBy"] as? [String] == ["t.orange"])
        #expect(orange["rules"] as? [String] == ["t.orange", "t.yellow"])
    }

    @Test(
        "A rule filter read through the rule's index alone, as past the time-ordered read's budget, pages the same list"
    )
    func ruleIndexRead() throws {
        let app = try TestApplication()
        try Self.seed(app)
        let since = Self.iso(Self.end.addingTimeInterval(-20 * 60))
        let cases: [([String: String], String)] = [
            (["rule": "t.yellow"], #"hits @> '[{"rule":"t.yellow"}]'"#),
            (["rule": "t.legacy"], #"hits @> '["t.legacy"]'"#),
            (["decidedBy": "t.orange"], Self.decided.replacingOccurrences(of: "%@", with: "t.orange")),
            (["rule": "t.nothing"], "false"),
            (
                ["rule": "t.yellow", "flow": "orange", "channel": "tsp", "since": since],
                #"hits @> '[{"rule":"t.yellow"}]' AND flow = 'orange' AND channel = 'tsp' AND created_at >= '\#(since)'"#
            ),
        ]
        for (query, predicate) in cases {
            let want = try expected(app, predicate)
            let (walked, cursor) = try Self.walk(query, pool: app.pool, ruleIndexOnly: true, pages: want.count / 7 + 2)
            #expect(walked == want, "\(query)")
            #expect(cursor == nil, "\(query)")
        }
        // Once the hours are rolled up, their counts choose the read: a rule hitting nothing goes
        // to its index at once, one hitting most attempts is read in time order; the lists stay
        // what the test's own query finds.
        _ = try ConsoleRollup.catchUp(now: Self.end.addingTimeInterval(3 * 3_600), database: app.pool)
        let plan = { (query: [String: String]) in
            try app.pool.withConnection { connection in
                try AttemptList.rulePlan(
                    try AttemptFilter(query: query), after: nil, limit: 51, connection: connection)
            }
        }
        #expect(try plan(["rule": "t.nothing"]) == .ruleIndex)
        #expect(try plan(["rule": "t.yellow"]) == .ordered(budget: AttemptList.denseBudget))
        #expect(try plan(["decidedBy": "t.orange", "channel": "tsp"]) == .ordered(budget: AttemptList.denseBudget))
        #expect(try plan(["rule": "t.yellow", "customerId": "lc-1"]) == .ordered(budget: AttemptList.orderedBudget))
        let key = try app.apiKey(role: .analyst)
        for (query, predicate) in cases {
            let page = try list(
                app, key, query.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: "&") + "&limit=200")
            #expect(ids(page) == (try expected(app, predicate)), "\(query)")
        }
    }

    @Test("Cursor pages walk the whole list once, in order, across attempts sharing a time")
    func pages() throws {
        let app = try TestApplication()
        try Self.seed(app)
        let key = try app.apiKey(role: .analyst)
        for (query, predicate) in [("", "true"), ("rule=t.yellow&", #"hits @> '[{"rule":"t.yellow"}]'"#)] {
            var walked: [String] = []
            var cursor: String?
            var pages = 0
            repeat {
                let page = try list(app, key, query + "limit=7" + (cursor.map { "&cursor=\($0)" } ?? ""))
                #expect(ids(page).count == 7 || page["nextCursor"] is NSNull)
                walked += ids(page)
                cursor = page["nextCursor"] as? String
                pages += 1
            } while cursor != nil && pages < 50
            let want = try expected(app, predicate)
            #expect(walked == want, "\(query)")
            #expect(pages == (want.count + 6) / 7)
        }
    }

    @Test("format=csv lists the same attempts, one line each, with the columns an analyst reads")
    func csv() throws {
        let app = try TestApplication()
        try Self.seed(app)
        let key = try app.apiKey(role: .analyst)
        let response = try app.client.get(
            "/v1/admin/attempts?format=csv&flow=orange&channel=tsp", headers: AdminFixtures.bearer(key))
        #expect(response.status == 200)
        #expect(response.header("Content-Type") == "text/csv; charset=utf-8")
        #expect(response.header("Content-Disposition")?.contains("attempts.csv") == true)
        // Sent as it is read: chunked, no length known up front.
        #expect(response.header("Transfer-Encoding")?.lowercased() == "chunked")
        #expect(response.header("Content-Length") == nil)
        let lines = response.text.components(separatedBy: "\r\n").filter { !$0.isEmpty }
        #expect(lines.first == "attempt_id,time,channel,flow,decided_by,card_last_four,customer_id,device_id")
        let want = try app.pool.withConnection { connection in
            try connection.query(
                """
                SELECT a.attempt_id::text || ',' || to_char(a.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
                       || ',' || a.channel || ',' || a.flow || ',t.orange,' || c.last_four || ',' || a.customer_id
                       || ',' || a.device_id AS line
                FROM provisioning_attempts a JOIN cards c ON c.card_id = a.card_id
                WHERE a.flow = 'orange' AND a.channel = 'tsp' ORDER BY a.created_at DESC, a.attempt_id DESC
                """
            ).map { try $0.decode("line", as: String.self) }
        }
        #expect(!want.isEmpty)
        #expect(Array(lines.dropFirst()) == want)
        // The whole list.
        let all = try app.client.get("/v1/admin/attempts?format=csv", headers: AdminFixtures.bearer(key))
        #expect(all.text.components(separatedBy: "\r\n").filter { !$0.isEmpty }.count == 91)
    }

    /// The test's own rule keys of an attempt (`a.hits`, `a.flow`), written as sql/0031 first
    /// defined them: one SQL statement over the hits.
    static let ownRuleKeys = """
        (SELECT coalesce(array_agg(DISTINCT k.key ORDER BY k.key), '{}')
         FROM jsonb_array_elements(CASE WHEN jsonb_typeof(a.hits) = 'array' THEN a.hits ELSE '[]'::jsonb END) h
         CROSS JOIN LATERAL (
             SELECT CASE jsonb_typeof(h) WHEN 'string' THEN h #>> '{}'
                                         WHEN 'object' THEN coalesce(h ->> 'rule', h ->> 'ruleId', h ->> 'id') END AS rule_id
         ) r
         CROSS JOIN LATERAL (
             SELECT 'hit:' || r.rule_id
             UNION ALL
             SELECT 'decided:' || r.rule_id
             WHERE jsonb_typeof(h) = 'object' AND coalesce(h ->> 'mode', 'live') = 'live'
               AND h ->> 'outcome' = a.flow AND a.flow <> 'green'
         ) k(key)
         WHERE r.rule_id IS NOT NULL)
        """

    @Test(
        "sql/0041 over attempts stored before it and after: rule and decidedBy filters with channel, flow and time list what the test's own query finds, through either read"
    )
    func ruleKeysMigration() throws {
        let database = try TestDatabase.create()
        defer { database.drop() }
        let pool = database.makePool(size: 2)
        defer { pool.close() }
        let sql = TestApplication.repositoryRoot.appendingPathComponent("sql")
        let folder = TestScratch.path("issuerd-migrations-0041")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let names = try FileManager.default.contentsOfDirectory(atPath: sql.path).filter { $0.hasSuffix(".sql") }
            .sorted()
        for name in names where name < "0041" {
            try FileManager.default.copyItem(
                at: sql.appendingPathComponent(name), to: folder.appendingPathComponent(name))
        }
        try Migrator(directory: folder, logger: .silent).migrate(using: pool)
        // Written before sql/0041: their index entries are the earlier function's keys.
        try Self.seed(pool, prefix: "before-")
        for name in names where name >= "0041" {
            try FileManager.default.copyItem(
                at: sql.appendingPathComponent(name), to: folder.appendingPathComponent(name))
        }
        #expect(try Migrator(directory: folder, logger: .silent).migrate(using: pool).map(\.version).first == 41)
        // Written after it, interleaved in time with the earlier ones (20 s later each).
        try Self.seed(pool, prefix: "after-", shift: 20, people: false)

        // Every attempt's keys, and hits of every shape stored, are what the statement gave.
        let differing = try pool.withConnection { connection in
            try connection.query(
                PostgresQuery(
                    unsafeSQL: """
                        SELECT count(*) AS n FROM (
                            SELECT hits, flow FROM provisioning_attempts
                            UNION ALL
                            SELECT h::jsonb, f FROM (VALUES
                                ('[{"rule":"b","outcome":"red"},{"rule":"a","outcome":"red"},"c",{"id":"b"},"B","a_","A",
                                   {"rule":"a","mode":"shadow","outcome":"red"},3,null,["n"],""]', 'red'),
                                (NULL, 'red'), ('{"rule":"a"}', 'red'), ('"a"', 'red'), ('[]', NULL),
                                ('[{"rule":"a","outcome":"green"}]', 'green'), ('[{"rule":"a","outcome":"y"}]', NULL),
                                ('[{"ruleId":"z","outcome":"y"},{"rule":null,"id":"q"},{"rule":5,"outcome":"y","mode":null},{"rule":{"x":1}}]', 'y')
                            ) v(h, f)
                        ) a
                        WHERE attempt_rule_keys(a.hits, a.flow) IS DISTINCT FROM \(Self.ownRuleKeys)
                        """)
            ).first?.decode("n", as: Int.self)
        }
        #expect(differing == 0)

        let since = Self.iso(Self.end.addingTimeInterval(-20 * 60))
        let until = Self.iso(Self.end.addingTimeInterval(-5 * 60))
        let decided = { (rule: String) in Self.decided.replacingOccurrences(of: "%@", with: rule) }
        let cases: [([String: String], String)] = [
            (["decidedBy": "t.yellow", "channel": "tsp"], decided("t.yellow") + " AND channel = 'tsp'"),
            (
                ["decidedBy": "t.orange", "channel": "in_app", "since": since, "until": until],
                decided("t.orange") + " AND channel = 'in_app' AND created_at >= '\(since)' AND created_at < '\(until)'"
            ),
            (
                ["decidedBy": "t.yellow", "flow": "yellow", "since": since],
                decided("t.yellow") + " AND flow = 'yellow' AND created_at >= '\(since)'"
            ),
            (["decidedBy": "t.yellow", "flow": "orange"], "false"),
            (["decidedBy": "t.shadow", "channel": "tsp"], "false"),
            (
                ["rule": "t.shadow", "flow": "green", "channel": "wallet_extension", "until": until],
                #"hits @> '[{"rule":"t.shadow"}]' AND flow = 'green' AND channel = 'wallet_extension' AND created_at < '\#(until)'"#
            ),
            (["rule": "t.legacy", "channel": "in_app"], #"hits @> '["t.legacy"]' AND channel = 'in_app'"#),
            (
                ["rule": "t.yellow", "channel": "tsp", "flow": "orange"],
                #"hits @> '[{"rule":"t.yellow"}]' AND channel = 'tsp' AND flow = 'orange'"#
            ),
        ]
        for (query, predicate) in cases {
            let want = try Self.expected(pool, predicate)
            if predicate != "false" {
                // Attempts of both sides of the migration are in the list.
                for prefix in ["before-", "after-"] {
                    let seeded = "attempt_id IN (SELECT md5('\(prefix)' || i)::uuid FROM generate_series(0, 89) i)"
                    #expect(!(try Self.expected(pool, predicate + " AND " + seeded)).isEmpty, "\(query) \(prefix)")
                }
            }
            for ruleIndexOnly in [false, true] {
                let (walked, cursor) = try Self.walk(
                    query, pool: pool, ruleIndexOnly: ruleIndexOnly, pages: want.count / 7 + 2)
                #expect(walked == want, "\(query), rule index only: \(ruleIndexOnly)")
                #expect(cursor == nil, "\(query)")
            }
        }
    }

    @Test(
        "sql/0042 indexes every partition's attempts by rule keys qualified by flow and channel (past a leftover of a stopped run), and a rule filter with a flow or channel asks that index for its qualified keys"
    )
    func listKeysMigration() throws {
        let database = try TestDatabase.create()
        defer { database.drop() }
        let pool = database.makePool(size: 2)
        defer { pool.close() }
        let sql = TestApplication.repositoryRoot.appendingPathComponent("sql")
        let folder = TestScratch.path("issuerd-migrations-0042")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let names = try FileManager.default.contentsOfDirectory(atPath: sql.path).filter { $0.hasSuffix(".sql") }
            .sorted()
        for name in names where name < "0042" {
            try FileManager.default.copyItem(
                at: sql.appendingPathComponent(name), to: folder.appendingPathComponent(name))
        }
        try Migrator(directory: folder, logger: .silent).migrate(using: pool)
        try Self.seed(pool, prefix: "before-")
        // A run stopped half way left an index under the name one partition's index gets.
        try pool.withConnection {
            try $0.execute(
                "CREATE INDEX provisioning_attempts_default_list_keys ON provisioning_attempts_default (flow)")
        }
        for name in names where name >= "0042" {
            try FileManager.default.copyItem(
                at: sql.appendingPathComponent(name), to: folder.appendingPathComponent(name))
        }
        #expect(try Migrator(directory: folder, logger: .silent).migrate(using: pool).map(\.version).first == 42)
        try Self.seed(pool, prefix: "after-", shift: 20, people: false)

        let state = { (connection: PostgresConnection) in
            try connection.query(
                """
                SELECT (SELECT indisvalid FROM pg_index WHERE indexrelid = 'attempts_list_keys'::regclass) AS valid,
                       to_regclass('attempts_rule_keys') IS NULL AS old_dropped,
                       (SELECT count(*) FROM pg_inherits i
                        WHERE i.inhparent = 'provisioning_attempts'::regclass
                          AND NOT EXISTS (SELECT 1 FROM pg_inherits ii JOIN pg_index x ON x.indexrelid = ii.inhrelid
                                          WHERE ii.inhparent = 'attempts_list_keys'::regclass
                                            AND x.indrelid = i.inhrelid))::int8 AS unindexed,
                       pg_get_indexdef('provisioning_attempts_default_list_keys'::regclass) AS rebuilt
                """
            )[0]
        }
        try pool.withConnection { connection in
            let row = try state(connection)
            #expect(try row.decode("valid", as: Bool.self))
            #expect(try row.decode("old_dropped", as: Bool.self))
            #expect(try row.decode("unindexed", as: Int64.self) == 0)
            #expect(try row.decode("rebuilt", as: String.self).contains("gin (attempt_list_keys(hits, flow, channel))"))
            // The planner has the new keys' statistics (the migration analyzed the table).
            let analyzed = try connection.query(
                """
                SELECT count(*) AS n FROM pg_stats s JOIN pg_inherits i ON i.inhrelid = to_regclass(s.tablename)
                WHERE i.inhparent = 'attempts_list_keys'::regclass AND s.most_common_elems IS NOT NULL
                """
            ).first?.decode("n", as: Int.self)
            #expect(analyzed ?? 0 > 0)
            // A partition made later gets the index as it is made.
            try connection.execute(
                "SELECT issuerd_make_attempt_partitions(now() + interval '8 months', now() + interval '9 months')")
            #expect(try state(connection).decode("unindexed", as: Int64.self) == 0)
            // Every attempt's keys: its rule keys as the test computes them, each also with its
            // channel, and each rule it hit with its flow.
            let differing = try connection.query(
                PostgresQuery(
                    unsafeSQL: """
                        SELECT count(*) AS n FROM provisioning_attempts a
                        WHERE (SELECT array_agg(x ORDER BY x) FROM unnest(attempt_list_keys(a.hits, a.flow, a.channel)) x)
                              IS DISTINCT FROM
                              (SELECT array_agg(x ORDER BY x)
                               FROM unnest(\(Self.ownRuleKeys)) k,
                                    LATERAL (VALUES (k), (k || '#' || a.channel),
                                                    (CASE WHEN k LIKE 'hit:%' THEN k || '@' || a.flow END)) v(x)
                               WHERE x IS NOT NULL)
                        """)
            ).first?.decode("n", as: Int.self)
            #expect(differing == 0)
        }

        // The read through the index asks it for the rule's keys qualified by the flow and channel (a
        // table this small is cheaper to read whole, so the plan is asked without that choice).
        let plan = try AttemptList.ruleIndexPlan(
            try AttemptFilter(query: ["rule": "t.yellow", "flow": "green", "channel": "in_app"]),
            settings: ["SET LOCAL enable_seqscan = off"], database: pool)
        #expect(
            plan.split(separator: "\n").contains {
                $0.contains("Index Cond") && $0.contains("{hit:t.yellow@green,hit:t.yellow#in_app}")
            },
            "\(plan)")
        #expect(
            try AttemptList.listKeys(AttemptFilter(query: ["decidedBy": "t.orange", "channel": "in_app"]))
                == ["decided:t.orange#in_app"])
        #expect(
            try AttemptList.listKeys(
                AttemptFilter(query: ["rule": "t.yellow", "decidedBy": "t.orange", "flow": "orange"]))
                == ["hit:t.yellow@orange", "decided:t.orange", "hit:t.orange@orange"])
        #expect(try AttemptList.listKeys(AttemptFilter(query: ["rule": "t.yellow"])) == ["hit:t.yellow"])
        // The count that sends a filter with a channel to the index: the keys' attempts over the
        // whole history, against the test's own count (none in mdes; no rule filter, no count).
        let few = { (query: [String: String], limit: Int) in
            try pool.withConnection {
                try AttemptList.fewMatches(try AttemptFilter(query: query), limit: limit, connection: $0)
            }
        }
        let yellowTSP = try Self.expected(pool, #"hits @> '[{"rule":"t.yellow"}]' AND channel = 'tsp'"#).count
        #expect(yellowTSP > 0)
        #expect(try few(["rule": "t.yellow", "channel": "tsp"], yellowTSP))
        #expect(try !few(["rule": "t.yellow", "channel": "tsp"], yellowTSP - 1))
        #expect(try few(["rule": "t.yellow", "channel": "mdes"], 0))
        #expect(try !few(["flow": "green", "channel": "tsp"], 1_000))
        #expect(try AttemptList.listKeys(AttemptFilter(query: ["flow": "green", "channel": "tsp"])) == nil)

        let decided = { (rule: String) in Self.decided.replacingOccurrences(of: "%@", with: rule) }
        let cases: [([String: String], String)] = [
            (["rule": "t.yellow", "flow": "green"], #"hits @> '[{"rule":"t.yellow"}]' AND flow = 'green'"#),
            (["decidedBy": "t.orange", "flow": "yellow"], decided("t.orange") + " AND flow = 'yellow'"),
            (["decidedBy": "t.orange", "channel": "mdes"], decided("t.orange") + " AND channel = 'mdes'"),
            (
                ["rule": "t.shadow", "flow": "green", "channel": "in_app"],
                #"hits @> '[{"rule":"t.shadow"}]' AND flow = 'green' AND channel = 'in_app'"#
            ),
            (
                ["rule": "t.yellow", "decidedBy": "t.orange", "channel": "wallet_extension"],
                #"hits @> '[{"rule":"t.yellow"}]' AND "# + decided("t.orange") + " AND channel = 'wallet_extension'"
            ),
        ]
        for (query, predicate) in cases {
            let want = try Self.expected(pool, predicate)
            for ruleIndexOnly in [false, true] {
                let (walked, cursor) = try Self.walk(
                    query, pool: pool, ruleIndexOnly: ruleIndexOnly, pages: want.count / 7 + 2)
                #expect(walked == want, "\(query), rule index only: \(ruleIndexOnly)")
                #expect(cursor == nil, "\(query)")
            }
        }
    }

    @Test(
        "sql/0042 attaches each partition's index in a transaction of its own: a reader holding one partition's indexes while it reads another does not deadlock with the migration"
    )
    func listKeysMigrationBesideReaders() throws {
        // The partitions are attached one after the other; a reader holds the first's or the
        // last's indexes, so that it meets the migration before and after the others.
        for held in [Edge.first, .last] { try Self.migrateBesideReader(holding: held) }
    }

    private enum Edge { case first, last }

    private static func migrateBesideReader(holding edge: Edge) throws {
        let database = try TestDatabase.create()
        defer { database.drop() }
        let pool = database.makePool(size: 3)
        defer { pool.close() }
        // The migration in two: its index builds, then (as a file of its own, so the test can
        // step in between) the steps from the first that attaches a partition's index.
        let sql = TestApplication.repositoryRoot.appendingPathComponent("sql")
        let names = try FileManager.default.contentsOfDirectory(atPath: sql.path).filter { $0.hasSuffix(".sql") }
            .sorted()
        let file = try #require(names.first { $0.hasPrefix("0042_") })
        let lines = try String(contentsOf: sql.appendingPathComponent(file), encoding: .utf8)
            .split(separator: "\n", omittingEmptySubsequences: false)
        let attach = try #require(lines.firstIndex { $0.contains("ATTACH PARTITION") })
        let split = try #require(lines[..<attach].lastIndex { $0.hasPrefix("-- issuerd:step") })
        let folder = TestScratch.path("issuerd-migrations-0042-readers-\(edge)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for name in names where name < "0042" {
            try FileManager.default.copyItem(
                at: sql.appendingPathComponent(name), to: folder.appendingPathComponent(name))
        }
        try Data(lines[..<split].joined(separator: "\n").utf8).write(to: folder.appendingPathComponent(file))
        try Migrator(directory: folder, logger: .silent).migrate(using: pool)
        try Data(("-- issuerd:no-transaction\n" + lines[split...].joined(separator: "\n")).utf8)
            .write(to: folder.appendingPathComponent("0043_list_keys_attached.sql"))

        let held = try pool.withConnection {
            try $0.query(
                PostgresQuery(
                    unsafeSQL: """
                        SELECT \(edge == .first ? "min" : "max")(c.relname) AS name
                        FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                        WHERE i.inhparent = 'provisioning_attempts'::regclass
                        """)
            )[0].decode("name", as: String.self)
        }
        let migrated = Mutex<Result<[Int], any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        try pool.withConnection { connection in
            try connection.transaction { reader in
                // A request's read of one month: every index of its partition held until the
                // transaction ends.
                _ = try reader.query(PostgresQuery(unsafeSQL: "SELECT count(*) AS n FROM \(held)"))
                DispatchQueue.global().async {
                    let result = Result { try Migrator(directory: folder, logger: .silent).migrate(using: pool) }
                    migrated.withLock { $0 = result.map { $0.map(\.version) } }
                    done.signal()
                }
                // Until the migration waits for that partition's index.
                var waiting = false
                for _ in 0..<2_000 where !waiting {
                    waiting =
                        try reader.query(
                            """
                            SELECT EXISTS (SELECT 1 FROM pg_locks WHERE NOT granted
                                           AND relation = to_regclass(\(held + "_list_keys"))) AS waiting
                            """
                        )[0].decode("waiting", as: Bool.self)
                    if !waiting { Thread.sleep(forTimeInterval: 0.01) }
                }
                #expect(waiting, "the migration never waited for \(held)'s index")
                // The same transaction reads every partition, as the request path's reads that
                // no time bound prunes do: none may wait for the migration (a deadlock with it).
                _ = try reader.query("SELECT count(*) AS n FROM provisioning_attempts")
            }
        }
        #expect(done.wait(timeout: .now() + 120) == .success)
        let result = try #require(migrated.withLock { $0 })
        #expect(try result.get() == [43], "holding \(held)")
        let valid = try pool.withConnection {
            try $0.query("SELECT indisvalid AS valid FROM pg_index WHERE indexrelid = 'attempts_list_keys'::regclass")[
                0
            ]
            .decode("valid", as: Bool.self)
        }
        #expect(valid)
    }

    @Test("An unknown parameter or a value the list cannot read is a 400 naming it, never ignored")
    func badParameters() throws {
        let app = try TestApplication()
        let key = try app.apiKey(role: .analyst)
        for (query, field) in [
            ("sinse=2026-01-01T00:00:00Z", "sinse"), ("since=yesterday", "since"), ("until=2026-13-01", "until"),
            ("since=2026-02-01T00:00:00Z&until=2026-01-01T00:00:00Z", "since"), ("since=", "since"),
            ("flow=red", "flow"), ("flow=", "flow"), ("channel=fax", "channel"), ("rule=a%20b", "rule"),
            ("rule=", "rule"), ("decidedBy=x%3By", "decidedBy"), ("customerId=", "customerId"),
            ("deviceId=a%20b", "deviceId"), ("cursor=nonsense", "cursor"), ("cursor=MTIz", "cursor"),
            ("limit=0", "limit"), ("limit=201", "limit"), ("format=xml", "format"),
            ("format=csv&limit=10", "limit"), ("q=4111111111111111", "q"),
        ] {
            let response = try app.client.get("/v1/admin/attempts?\(query)", headers: AdminFixtures.bearer(key))
            #expect(response.status == 400, "\(query): \(response.text)")
            let error = response.errorEnvelope()
            #expect(error?["code"] as? String == "invalid_request", "\(query)")
            #expect(error?["field"] as? String == field, "\(query): \(response.text)")
        }
    }
}
