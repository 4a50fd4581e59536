import Foundation
import IssuerdPostgres
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// The attempt an Authorize Service records keeps the answer MDES received in its facts (the
/// console and `rules explain` show it), member for member, green and yellow.
@Suite("MDES Authorize Service records its answer in the attempt's facts")
struct MDESAttemptFactsTests {
    @Test(
        "facts.response is the answer's JSON; the request's facts are beside it",
        arguments: ["APPROVED", "REQUIRE_ADDITIONAL_AUTHENTICATION"])
    func responseInFacts(recommendation: String) throws {
        let fixture = try MDESFixture()
        let answer = try fixture.post(
            "authorizeService", try fixture.authorizeBody(requestId: "req-facts", recommendation: recommendation))
        #expect(answer.status == 200, "\(answer.text)")
        let sent = try #require(answer.jsonObject())
        let stored: String = try fixture.app.pool.withConnection { connection in
            try connection.query(
                "SELECT facts::text FROM provisioning_attempts WHERE channel = 'mdes' AND request_id = 'req-facts'"
            ).first.map { try $0.decode(0, as: String.self) } ?? "{}"
        }
        let facts = try #require(try JSONSerialization.jsonObject(with: Data(stored.utf8)) as? [String: Any])
        let response = try #require(facts["response"] as? [String: Any])
        #expect(NSDictionary(dictionary: response).isEqual(to: sent))
        #expect(response["decision"] as? String == sent["decision"] as? String)
        #expect(facts.count > 1, "the request's own facts beside the answer: \(facts.keys.sorted())")
    }
}
