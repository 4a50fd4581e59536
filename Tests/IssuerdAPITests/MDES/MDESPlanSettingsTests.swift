import Foundation
import IssuerdPostgres
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// Authorize Service's context statement (the TSP authorization's, with its velocity scans) runs
/// under the provisioning statements' plan settings: one generic plan per connection, B-tree
/// look-ups only. Without them every request was planned anew with the BRIN index's bitmap
/// scans, and PostgreSQL spent 122 ms per request on it (scripts/bench-api --mode mdes).
@Suite("MDES Authorize Service plans its context statement as the TSP authorization does")
struct MDESPlanSettingsTests {
    @Test("The attempt is written under force_generic_plan with sequential and bitmap scans off")
    func settingsHoldInTheTransaction() throws {
        let fixture = try MDESFixture()
        // What the transaction's settings are when it writes the attempt, seen by a trigger.
        try fixture.app.pool.withConnection { connection in
            try connection.execute(
                unsafeSQL: """
                    CREATE TABLE plan_settings_seen (plan_cache_mode text, enable_seqscan text, enable_bitmapscan text);
                    CREATE FUNCTION record_plan_settings() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN
                        INSERT INTO plan_settings_seen VALUES (current_setting('plan_cache_mode'),
                            current_setting('enable_seqscan'), current_setting('enable_bitmapscan'));
                        RETURN NEW;
                    END $$;
                    CREATE TRIGGER record_plan_settings BEFORE INSERT ON provisioning_attempts
                        FOR EACH ROW EXECUTE FUNCTION record_plan_settings();
                    """)
        }
        let answer = try fixture.post("authorizeService", try fixture.authorizeBody(requestId: "req-plan"))
        #expect(answer.status == 200, "\(answer.text)")
        #expect(answer.jsonObject()?["decision"] as? String == "APPROVED")
        let seen: [[String]] = try fixture.app.pool.withConnection { connection in
            try connection.query("SELECT plan_cache_mode, enable_seqscan, enable_bitmapscan FROM plan_settings_seen")
                .map {
                    [
                        try $0.decode(0, as: String.self), try $0.decode(1, as: String.self),
                        try $0.decode(2, as: String.self),
                    ]
                }
        }
        #expect(seen == [["force_generic_plan", "off", "off"]])
        // Transaction-local: a pooled connection afterwards has the server's defaults again.
        let after: String = try fixture.app.pool.withConnection { connection in
            try connection.query("SELECT current_setting('enable_seqscan')").first.map {
                try $0.decode(0, as: String.self)
            } ?? ""
        }
        #expect(after == "on")
    }
}
