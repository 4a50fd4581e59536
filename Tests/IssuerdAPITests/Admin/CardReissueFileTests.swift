import Foundation
import IssuerdPostgres
import IssuerdStorage
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// `issuerd cards reissue FILE.csv` applies a chunk of lines set-wise: these tests check, with
/// their own SQL, that each line passing its checks writes what the route writes for it, that the
/// refused lines of the same chunk write nothing, and that the same file again changes nothing.
@Suite("Card reissue from a file: chunks")
struct CardReissueFileTests {
    /// No dispatcher and no sealer in the server: the rows the file wrote stay as written.
    private static func fixture() throws -> ReissueFixture {
        try ReissueFixture(extra: ["ISSUERD_OUTBOX_DISPATCH": "false", "ISSUERD_AUDIT_SEAL": "false"])
    }

    /// The command's environment: the test database, the master key, both account-data certificates.
    private static func environment(_ fixture: ReissueFixture) throws -> [String: String] {
        let certificate = fixture.app.directory.appendingPathComponent("reissue-file-cert.pem")
        try GooglePayFixtures.mastercard.certificatePEM.write(to: certificate, atomically: true, encoding: .utf8)
        return [
            "ISSUERD_DATABASE_URL": fixture.app.serviceConnectionString,
            "ISSUERD_MASTER_KEY": Data(repeating: 0x42, count: 32).base64EncodedString(),
            "ISSUERD_MDES_MASTERCARD_CERT": certificate.path, "ISSUERD_TSP_ACCOUNT_CERT": certificate.path,
        ]
    }

    /// Each row of `sql` (one text column named `line`).
    private static func lines(_ fixture: ReissueFixture, _ sql: String) throws -> [String] {
        try fixture.app.pool.withConnection { connection in
            try connection.query(PostgresQuery(unsafeSQL: sql)).map { try $0.decode("line", as: String.self) }
        }
    }

    /// Every row a reissue writes, whole (ids and times included): equal before and after a
    /// run that must change nothing.
    private static func dump(_ fixture: ReissueFixture) throws -> [String] {
        var all: [String] = []
        for table in [
            "cards", "card_status_history", "tokens", "token_events", "card_reissues", "card_reissue_tokens", "outbox",
            "audit_log",
        ] {
            all += try lines(fixture, "SELECT '\(table) ' || t::text AS line FROM \(table) t ORDER BY t::text")
        }
        return all
    }

    private static func run(
        _ file: URL, _ fixture: ReissueFixture
    ) throws -> (status: Int32, lines: [String], standardError: String) {
        let run = try CommandLineRunner.run(["cards", "reissue", file.path], environment: try environment(fixture))
        return (run.status, run.standardOutput.split(separator: "\n").map(String.init), run.standardError)
    }

    @Test(
        "A chunk's refused lines write nothing and are named by line; its good lines write what the route writes; the same file again changes nothing"
    )
    func mixedChunkAndRerun() throws {
        let fixture = try Self.fixture()
        try fixture.card("card-g1", customer: "c-g1", serial: 601)
        let g2PAN = try fixture.card("card-g2", customer: "c-g2", serial: 602, network: "visa")
        let g3PAN = try fixture.card("card-g3", customer: "c-g3", serial: 603)
        try fixture.card("card-closed", customer: "c-cl", serial: 604)
        try fixture.card("card-w", customer: "c-w", serial: 605)
        try fixture.card("card-p", customer: "c-p", serial: 606)
        try fixture.card("card-e", customer: "c-e", serial: 607)
        try fixture.card("card-spare", customer: "c-s", serial: 608)
        try CustomerServiceOutboxTests.insertToken(fixture.app, reference: "tok-g1-a", card: "card-g1")
        try CustomerServiceOutboxTests.insertToken(fixture.app, reference: "tok-g1-b", card: "card-g1")
        try CustomerServiceOutboxTests.insertToken(
            fixture.app, reference: "tok-g1-p", card: "card-g1", status: "pending_verification")
        try AdminFixtures.insertToken(fixture.app, reference: "visa-g2", card: "card-g2", status: "active")
        #expect(try fixture.status("card-g1", "lost").status == 200)
        #expect(try fixture.status("card-closed", "closed").status == 200)
        let expiry = ReissueFixture.newExpiration
        let waiting = try fixture.reissue("card-w", #"{"reason":"renewal","newCard":{"expiration":"\#(expiry)"}}"#)
        #expect(waiting.status == 202, "\(waiting.text)")
        let newPAN = ReissueFixture.newPAN(611)
        let file = fixture.app.directory.appendingPathComponent("mixed.csv")
        try """
        card_id,reason,expiration,new_card_id,account_number,pan_sequence_number,cardholder_name,apply_at
        card-g1,lost,\(expiry),card-g1n,\(newPAN),,,now
        card-none,renewal,\(expiry),,,,,
        card-g2,renewal,\(expiry),card-g2n,,,,now
        card-closed,renewal,\(expiry),,,,,
        card-w,renewal,\(expiry),,,,,
        card-p,compromised,\(expiry),,\(g3PAN),,,
        card-e,renewal,\(expiry),card-spare,,,,
        card-g3,renewal,\(expiry),card-g3n,,01,,

        """.write(to: file, atomically: true, encoding: .utf8)
        let auditBefore = try Self.lines(fixture, "SELECT count(*)::text AS line FROM audit_log")

        let first = try Self.run(file, fixture)
        #expect(first.status == 1)
        #expect(first.lines.last == "cards reissue: reissued=3 unchanged=0 errors=5", "\(first.lines)")
        let refused = first.lines.filter { $0.hasPrefix("line ") }
        #expect(refused.count == 5)
        for (line, code) in [
            (3, "no card card-none"), (5, "invalid_state"), (6, "reissue_pending"), (7, "pan_in_use"),
            (8, "already_exists"),
        ] {
            #expect(refused.contains { $0.hasPrefix("line \(line):") && $0.contains(code) }, "line \(line): \(refused)")
        }
        #expect(!first.lines.joined().contains(newPAN) && !first.lines.joined().contains(g3PAN))
        // Applied together: no line of the chunk went the one-by-one way.
        #expect(!first.standardError.contains("one by one"), "\(first.standardError)")

        // The refused lines' cards are as they were; one reissue per good line (and the route's).
        #expect(
            try Self.lines(
                fixture,
                "SELECT old_card_id || ' ' || new_card_id || ' ' || reason || ' ' || apply_at || ' ' || status || ' ' || pan_changed AS line FROM card_reissues WHERE old_card_id <> 'card-w' ORDER BY old_card_id"
            ) == [
                "card-g1 card-g1n lost now in_progress true", "card-g2 card-g2n renewal now in_progress false",
                "card-g3 card-g3n renewal activation awaiting_activation false",
            ])
        #expect(
            try Self.lines(fixture, "SELECT count(*)::text AS line FROM card_reissues WHERE old_card_id = 'card-w'")
                == ["1"])
        #expect(
            try Self.lines(
                fixture,
                """
                SELECT c.card_id || ' ' || c.status || ' ' || (c.primary_account_identifier = o.primary_account_identifier)::text
                       || ' ' || c.last_four || ' ' || c.expiration || ' ' || c.customer_id AS line
                FROM cards c JOIN card_reissues r ON r.new_card_id = c.card_id JOIN cards o ON o.card_id = r.old_card_id
                WHERE r.old_card_id <> 'card-w' ORDER BY c.card_id
                """)
                == [
                    "card-g1n inactive true \(newPAN.suffix(4)) \(expiry) c-g1",
                    "card-g2n inactive true \(g2PAN.suffix(4)) \(expiry) c-g2",
                    "card-g3n inactive true \(g3PAN.suffix(4)) \(expiry) c-g3",
                ])
        #expect(
            try Self.lines(
                fixture,
                "SELECT card_id || ' ' || status AS line FROM cards WHERE card_id IN ('card-g1', 'card-g2', 'card-g3', 'card-closed', 'card-w', 'card-p', 'card-e', 'card-spare') ORDER BY card_id"
            ) == [
                "card-closed closed", "card-e active", "card-g1 replaced", "card-g2 replaced", "card-g3 active",
                "card-p active", "card-spare active", "card-w active",
            ])
        #expect(
            try Self.lines(
                fixture,
                "SELECT card_id || ' ' || coalesce(old_status, '-') || ' ' || new_status || ' ' || reason AS line FROM card_status_history WHERE card_id IN ('card-g1', 'card-g2', 'card-g1n', 'card-g2n', 'card-g3n') AND (new_status IN ('replaced', 'inactive')) ORDER BY card_id"
            ) == [
                "card-g1 lost replaced reissued as card-g1n", "card-g1n - inactive created",
                "card-g2 active replaced reissued as card-g2n", "card-g2n - inactive created",
                "card-g3n - inactive created",
            ])

        // The tokens: the loss's suspension lifted as they moved, the unactivated one deleted.
        #expect(
            try Self.lines(
                fixture,
                "SELECT token_reference || ' ' || card_id || ' ' || status || ' ' || coalesce(issuer_suspended_from, '-') AS line FROM tokens ORDER BY token_reference"
            ) == [
                "tok-g1-a card-g1n active -", "tok-g1-b card-g1n active -", "tok-g1-p card-g1 deleted -",
                "visa-g2 card-g2n active -",
            ])
        #expect(
            try Self.lines(
                fixture,
                "SELECT token_reference || ' ' || card_id || ' ' || event || ' ' || source AS line FROM token_events WHERE event IN ('resumed', 'deleted') ORDER BY token_reference"
            ) == [
                "tok-g1-a card-g1n resumed issuer", "tok-g1-b card-g1n resumed issuer",
                "tok-g1-p card-g1 deleted issuer",
            ])
        #expect(
            try Self.lines(
                fixture,
                "SELECT r.old_card_id || ' ' || t.token_reference || ' ' || t.service || ' ' || t.action || ' ' || t.resume || ' ' || t.state AS line FROM card_reissue_tokens t JOIN card_reissues r USING (reissue_id) ORDER BY t.token_reference"
            ) == [
                "card-g1 tok-g1-a mdes move true pending", "card-g1 tok-g1-b mdes move true pending",
                "card-g1 tok-g1-p mdes delete false pending", "card-g2 visa-g2 tsp move false pending",
            ])

        // The outbox: the delete before the move, then the TSP's notification; nothing else.
        let g1 = try #require(
            Self.lines(fixture, "SELECT reissue_id::text AS line FROM card_reissues WHERE old_card_id = 'card-g1'")
                .first)
        let g2 = try #require(
            Self.lines(fixture, "SELECT reissue_id::text AS line FROM card_reissues WHERE old_card_id = 'card-g2'")
                .first)
        #expect(
            try Self.lines(
                fixture,
                "SELECT kind || ' ' || dedup_key || ' ' || status AS line FROM outbox WHERE payload ->> 'reissueId' IS NOT NULL ORDER BY id"
            ) == [
                "mdes_csapi mdes_csapi:tok-g1-p:delete:\(g1) pending", "mdes_csapi mdes_csapi:update:\(g1) pending",
                "tsp tsp:pan_lifecycle:\(g2) pending",
            ])
        #expect(
            try Self.lines(
                fixture,
                "SELECT (payload -> 'tokenReferences')::text || ' ' || (payload -> 'resumeTokens')::text || ' ' || (payload ->> 'cardId') AS line FROM outbox WHERE dedup_key = 'mdes_csapi:update:\(g1)'"
            ) == [#"["tok-g1-a", "tok-g1-b"] ["tok-g1-a", "tok-g1-b"] card-g1n"#])
        #expect(
            try Self.lines(
                fixture,
                "SELECT (payload ->> 'operation') || ' ' || (payload ->> 'previousCardId') || ' ' || (payload ->> 'cardId') AS line FROM outbox WHERE dedup_key = 'tsp:pan_lifecycle:\(g2)'"
            ) == ["EXP_DATE_UPDATE card-g2 card-g2n"])

        // One audit entry per start and per application, as the route writes; the chain holds.
        #expect(
            try Self.lines(
                fixture,
                "SELECT action || ' ' || subject || ' ' || (details::jsonb ->> 'newCardId') AS line FROM audit_log WHERE action IN ('card.reissued', 'card.reissue_applied') AND subject <> 'card:card-w' ORDER BY action, subject"
            ) == [
                "card.reissue_applied card:card-g1 card-g1n", "card.reissue_applied card:card-g2 card-g2n",
                "card.reissued card:card-g1 card-g1n", "card.reissued card:card-g2 card-g2n",
                "card.reissued card:card-g3 card-g3n",
            ])
        #expect(
            try Self.lines(fixture, "SELECT count(*)::text AS line FROM audit_log") == [
                String(Int(auditBefore[0])! + 5)
            ])
        let verification = try fixture.app.pool.withConnection { connection in
            try AuditLog.seal(connection: connection, wait: true)
            return try AuditLog.verify(connection: connection)
        }
        #expect(verification.isIntact, "\(verification)")

        // The same file again: the good lines unchanged, the bad ones refused alike, nothing written.
        let before = try Self.dump(fixture)
        let second = try Self.run(file, fixture)
        #expect(second.lines.last == "cards reissue: reissued=0 unchanged=3 errors=5", "\(second.lines)")
        #expect(
            second.lines.filter { $0.hasPrefix("line ") }.map { String($0.prefix(7)) } == [
                "line 3:", "line 5:", "line 6:", "line 7:", "line 8:",
            ])
        #expect(try Self.dump(fixture) == before)
    }

    @Test("Lines of one chunk that touch each other are applied one by one, as in file order")
    func touchingLines() throws {
        let fixture = try Self.fixture()
        try fixture.card("card-t1", customer: "c-t1", serial: 621)
        try fixture.card("card-t2", customer: "c-t2", serial: 622)
        let expiry = ReissueFixture.newExpiration
        let file = fixture.app.directory.appendingPathComponent("touching.csv")
        // The second line's card has the first line's reissue waiting; the third line's new card
        // id is the first line's new card.
        try """
        card_id,reason,expiration,new_card_id,apply_at
        card-t1,renewal,\(expiry),card-t1n,
        card-t1,damaged,\(expiry),card-t1d,now
        card-t2,renewal,\(expiry),card-t1n,now
        card-t2,renewal,\(expiry),card-t2n,now

        """.write(to: file, atomically: true, encoding: .utf8)
        let first = try Self.run(file, fixture)
        #expect(first.lines.last == "cards reissue: reissued=2 unchanged=0 errors=2", "\(first.lines)")
        #expect(
            first.standardError.contains(
                "cards reissue: lines 2-5 applied one by one: some concern the same card, new card or new PAN"),
            "\(first.standardError)")
        let refused = first.lines.filter { $0.hasPrefix("line ") }
        #expect(refused.count == 2)
        #expect(refused.first?.hasPrefix("line 3:") == true && refused.first?.contains("reissue_pending") == true)
        #expect(refused.last?.hasPrefix("line 4:") == true && refused.last?.contains("already_exists") == true)
        #expect(
            try Self.lines(
                fixture,
                "SELECT old_card_id || ' ' || new_card_id || ' ' || status AS line FROM card_reissues ORDER BY old_card_id"
            ) == ["card-t1 card-t1n awaiting_activation", "card-t2 card-t2n completed"])
        let before = try Self.dump(fixture)
        let second = try Self.run(file, fixture)
        #expect(second.lines.last == "cards reissue: reissued=0 unchanged=2 errors=2", "\(second.lines)")
        #expect(try Self.dump(fixture) == before)
    }

    @Test("A chunk naming a card the chunk before it reissued reads that card once the chunk before is committed")
    func chunkAfterChunk() throws {
        let fixture = try Self.fixture()
        try fixture.card("card-p1", customer: "c-p1", serial: 631)
        try fixture.card("card-p2", customer: "c-p2", serial: 632)
        let expiry = ReissueFixture.newExpiration
        // The first chunk (500 lines): card-p1 reissued at once as card-p1n, and 499 unknown
        // cards. The second: card-p1n (inactive, so its reissue waits) and card-p1 (replaced by
        // now), both refused as the first chunk left them, and card-p2, applied.
        var text = "card_id,reason,expiration,new_card_id,apply_at\ncard-p1,renewal,\(expiry),card-p1n,now\n"
        for index in 0..<499 { text += "card-none-\(index),renewal,\(expiry),,now\n" }
        text += "card-p1n,renewal,\(expiry),card-p1x,now\ncard-p1,damaged,\(expiry),card-p1d,now\n"
        text += "card-p2,renewal,\(expiry),card-p2n,now\n"
        let file = fixture.app.directory.appendingPathComponent("two-chunks.csv")
        try text.write(to: file, atomically: true, encoding: .utf8)
        let run = try Self.run(file, fixture)
        #expect(run.lines.last == "cards reissue: reissued=2 unchanged=0 errors=501", "\(run.lines.suffix(4))")
        let refused = run.lines.filter { $0.hasPrefix("line 502:") || $0.hasPrefix("line 503:") }
        #expect(refused.count == 2)
        #expect(refused.first?.contains("reissue_pending") == true, "\(refused)")
        #expect(refused.last?.contains("invalid_state") == true, "\(refused)")
        #expect(
            try Self.lines(
                fixture,
                "SELECT old_card_id || ' ' || new_card_id || ' ' || status AS line FROM card_reissues ORDER BY old_card_id"
            ) == ["card-p1 card-p1n completed", "card-p2 card-p2n completed"])
    }
}
