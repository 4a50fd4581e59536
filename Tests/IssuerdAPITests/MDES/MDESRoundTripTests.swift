import Foundation
import IssuerdPostgres
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// Authorize Service reads the database once and writes it once, as the TSP authorization does:
/// the pair's lock, its stored answer and the context in one round trip, the attempt, a pending
/// token and the kept answer with `COMMIT` in the second. Counted on the test's own thread
/// (``PostgresRoundTrips``), where the router runs the request in process; one pooled
/// connection, so the statements the warm-up prepared are the ones the measured requests use.
@Suite("MDES Authorize Service in at most three round trips")
struct MDESRoundTripTests {
    @Test("Green, yellow and a retry each wait for the database at most three times once prepared")
    func authorizeServiceRoundTrips() throws {
        let fixture = try MDESFixture(environment: ["ISSUERD_DB_POOL_SIZE": "1"], transport: .router)
        func authorize(_ index: Int, recommendation: String = "APPROVED") throws -> String {
            try fixture.authorizeBody(
                requestId: "trips-\(index)", tokenReference: "DWSPMC00000000000000000000000\(index)",
                recommendation: recommendation, extra: ["paymentAppInstanceId": "pai-trips-\(index)"])
        }
        func measured(_ body: String) throws -> (answer: TestHTTPResponse, roundTrips: Int) {
            let before = PostgresRoundTrips.onCurrentThread
            let answer = try fixture.post("authorizeService", body)
            return (answer, PostgresRoundTrips.onCurrentThread - before)
        }
        // The first of each shape prepares its statements on the connection.
        for (index, recommendation) in ["APPROVED", "REQUIRE_ADDITIONAL_AUTHENTICATION"].enumerated() {
            let warm = try fixture.post("authorizeService", try authorize(index, recommendation: recommendation))
            #expect(warm.status == 200, "\(warm.text)")
        }

        let greenBody = try authorize(2)
        let green = try measured(greenBody)
        #expect(green.answer.status == 200, "\(green.answer.text)")
        #expect(green.answer.jsonObject()?["decision"] as? String == "APPROVED")
        #expect(green.roundTrips <= 3, "green: \(green.roundTrips) round trips")

        let yellow = try measured(try authorize(3, recommendation: "REQUIRE_ADDITIONAL_AUTHENTICATION"))
        #expect(yellow.answer.status == 200, "\(yellow.answer.text)")
        #expect(yellow.answer.jsonObject()?["decision"] as? String == "REQUIRE_ADDITIONAL_AUTHENTICATION")
        #expect(yellow.roundTrips <= 3, "yellow: \(yellow.roundTrips) round trips")
        // The token awaits step-up, its history begun, in the same commit.
        #expect(
            try fixture.count(
                """
                SELECT count(*) FROM tokens t JOIN token_events e USING (token_reference)
                WHERE t.token_reference = 'DWSPMC000000000000000000000003' AND t.status = 'pending_verification'
                  AND t.service = 'mdes' AND e.event = 'created' AND e.source = 'mdes'
                """) == 1)

        // MDES's retry: the same bytes, from the answer kept with the first.
        let retry = try measured(greenBody)
        #expect(retry.answer.text == green.answer.text)
        #expect(retry.roundTrips <= 3, "retry: \(retry.roundTrips) round trips")
        #expect(try fixture.count("SELECT count(*) FROM provisioning_attempts WHERE request_id = 'trips-2'") == 1)
        #expect(try fixture.count("SELECT count(*) FROM mdes_requests WHERE request_id LIKE 'trips-%'") == 4)
    }
}
