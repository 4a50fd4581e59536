import Foundation
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// What bounds the one-time codes of MDES tokens: a code MDES gives, and how many messages one
/// cardholder receives an hour whatever the token and the method.
@Suite("MDES activation code bounds")
struct MDESActivationCodeBoundsTests {
    /// Authorizes a yellow token under `tur` for card-1.
    static func yellowToken(_ fixture: MDESFixture, _ tur: String, payload: [String: Any]? = nil) throws {
        let yellow = try fixture.post(
            "authorizeService",
            try fixture.authorizeBody(
                requestId: "y-\(tur)", tokenReference: tur, payload: payload,
                recommendation: "REQUIRE_ADDITIONAL_AUTHENTICATION"))
        #expect(yellow.jsonObject()?["decision"] as? String == "REQUIRE_ADDITIONAL_AUTHENTICATION", "\(yellow.text)")
    }

    /// Deliver Activation Code for `tur`, with the code MDES gives when `code` is set.
    static func deliver(
        _ fixture: MDESFixture, _ tur: String, requestId: String, method: String = "TEXT_TO_CARDHOLDER_NUMBER",
        code: String? = nil, expiry: Date = Date().addingTimeInterval(600)
    ) throws -> TestHTTPResponse {
        var body: [String: Any] = [
            "requestId": requestId, "tokenUniqueReference": tur, "correlationId": "D98765432104",
            "activationMethod": ["type": method, "value": "masked"],
        ]
        if let code {
            body["activationCode"] = code
            body["expirationDateTime"] = MDESFixture.dateTime(expiry)
        }
        return try fixture.post(
            "deliverActivationCode", String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self))
    }

    @Test("A code MDES gives lives at most ISSUERD_OTP_TTL, and one shorter than six characters is 400")
    func givenCodesAreBounded() throws {
        let fixture = try MDESFixture(environment: ["ISSUERD_OTP_TTL": "5m"])
        let tur = "DWSPMC00000000000000000000bounds"
        try Self.yellowToken(fixture, tur)
        for short in ["1", "12345"] {
            let refused = try Self.deliver(fixture, tur, requestId: "short-\(short)", code: short)
            #expect(refused.status == 400, "\(refused.text)")
            #expect(refused.jsonObject()?["errorCode"] as? String == "INVALID_FIELD_VALUE")
        }
        #expect(try fixture.count("SELECT count(*) FROM challenges") == 0)

        let tenYears = Date().addingTimeInterval(10 * 365 * 86_400)
        let before = Date()
        let delivered = try Self.deliver(fixture, tur, requestId: "long", code: "482913", expiry: tenYears)
        #expect(delivered.status == 200, "\(delivered.text)")
        #expect(
            try fixture.count(
                """
                SELECT count(*) FROM challenges WHERE token_reference = '\(tur)'
                  AND expires_at <= '\(MDESFixture.dateTime(before.addingTimeInterval(301)))'::timestamptz
                """) == 1)
        #expect(
            try fixture.count(
                "SELECT count(*) FROM outbox WHERE kind = 'notify' AND (payload ->> 'validMinutes')::int <= 5") == 1)
    }

    @Test("One customer and one phone number get at most ISSUERD_OTP_MAX_SENDS_PER_CARDHOLDER_PER_HOUR codes")
    func cardholderCapAcrossTokensAndMethods() throws {
        let fixture = try MDESFixture(environment: ["ISSUERD_OTP_MAX_SENDS_PER_CARDHOLDER_PER_HOUR": "4"])
        let tokens = (1...3).map { "DWSPMC0000000000000000000cap\($0)" }
        for tur in tokens { try Self.yellowToken(fixture, tur) }
        // The first token: a code and two re-sends, its own limit of 3.
        for index in 1...3 {
            #expect(try Self.deliver(fixture, tokens[0], requestId: "a\(index)", code: "482913").status == 200)
        }
        #expect(try fixture.count("SELECT count(*) FROM outbox WHERE kind = 'notify'") == 3)
        // The second token: one more message reaches the customer's 4, then nothing by text or e-mail.
        #expect(try Self.deliver(fixture, tokens[1], requestId: "b1").status == 200)
        let refused = try Self.deliver(fixture, tokens[2], requestId: "c1")
        #expect(refused.text.contains("ACTIVATION_METHOD_REFUSED"), "\(refused.text)")
        let email = try Self.deliver(fixture, tokens[2], requestId: "c2", method: "EMAIL_TO_CARDHOLDER_ADDRESS")
        #expect(email.text.contains("ACTIVATION_METHOD_REFUSED"), "\(email.text)")
        #expect(try fixture.count("SELECT count(*) FROM outbox WHERE kind = 'notify'") == 4)

        // Another customer with the same phone number: that number has had its 4; e-mail still goes.
        try DecisionFixtures.customer(fixture.app, "cust-2", phone: "01012345678", email: "other@example.com")
        try DecisionFixtures.card(
            fixture.app, "card-2", customer: "cust-2", pan: "5105105105105100", expiration: "12/30",
            network: "mastercard")
        let other = "DWSPMC00000000000000000000other"
        try Self.yellowToken(fixture, other, payload: MDESFixture.fundingAccount(pan: "5105105105105100"))
        let sameNumber = try Self.deliver(fixture, other, requestId: "d1")
        #expect(sameNumber.text.contains("ACTIVATION_METHOD_REFUSED"), "\(sameNumber.text)")
        let otherAddress = try Self.deliver(fixture, other, requestId: "d2", method: "EMAIL_TO_CARDHOLDER_ADDRESS")
        #expect(otherAddress.status == 200, "\(otherAddress.text)")
        #expect(try fixture.count("SELECT count(*) FROM outbox WHERE kind = 'notify'") == 5)
    }
}
