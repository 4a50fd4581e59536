import Foundation
import IssuerdMDES
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// `POST /mdes/issuerServices/1/0/{op}` over HTTP against a real issuerd and PostgreSQL.
@Suite("MDES issuer services over HTTP")
struct MDESIssuerServicesTests {
    @Test("Without ISSUERD_MDES_ISSUER_KEYS there is no /mdes/ route")
    func absentWithoutKeys() throws {
        let app = try TestApplication()
        let response = try app.client.postJSON(
            "/mdes/issuerServices/1/0/authorizeService", #"{"requestId":"1"}"#, headers: ["X-Client-Verify": "SUCCESS"])
        #expect(response.status == 404)
    }

    @Test("The gate: no header, a failed verification or an untrusted peer is 403 and records nothing")
    func gate() throws {
        let fixture = try MDESFixture()
        let body = try fixture.authorizeBody()
        for headers in [[:], ["X-Client-Verify": "FAILED:unable to verify"], ["X-Client-Verify": "NONE"]] {
            let refused = try fixture.post("authorizeService", body, headers: headers)
            #expect(refused.status == 403, "\(headers)")
            #expect(refused.errorEnvelope()?["code"] as? String == "forbidden")
        }
        #expect(try fixture.count("SELECT count(*) FROM mdes_requests") == 0)
        #expect(try fixture.count("SELECT count(*) FROM provisioning_attempts") == 0)

        let untrusted = try MDESFixture(environment: ["ISSUERD_TRUSTED_PROXIES": "10.1.2.3,fd00::/8"])
        let refused = try untrusted.post("authorizeService", try untrusted.authorizeBody())
        #expect(refused.status == 403)
        #expect(try untrusted.count("SELECT count(*) FROM mdes_requests") == 0)
        #expect(try untrusted.count("SELECT count(*) FROM provisioning_attempts") == 0)
    }

    @Test("The gate believes exactly one X-Client-Verify: two fields in either order are 403 and record nothing")
    func gateRefusesRepeatedVerdicts() throws {
        let fixture = try MDESFixture()
        let body = try fixture.authorizeBody()
        // A proxy that appends its verdict to the client's own: what the client wrote comes first.
        for verdicts in [["SUCCESS", "FAILED:unable to verify"], ["FAILED", "SUCCESS"], ["SUCCESS", "SUCCESS"]] {
            let connection = try RawHTTPConnection(port: fixture.app.application.port, timeout: 10)
            defer { connection.close() }
            let fields = verdicts.map { "X-Client-Verify: \($0)\r\n" }.joined()
            try connection.send(
                "POST /mdes/issuerServices/1/0/authorizeService HTTP/1.1\r\nHost: x\r\n\(fields)"
                    + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
            let refused = try connection.readResponse()
            #expect(refused.status == 403, "\(verdicts)")
            #expect(refused.errorEnvelope()?["code"] as? String == "forbidden", "\(verdicts)")
        }
        #expect(try fixture.count("SELECT count(*) FROM mdes_requests") == 0)
        #expect(try fixture.count("SELECT count(*) FROM provisioning_attempts") == 0)
        #expect(try fixture.post("authorizeService", body).status == 200)
    }

    @Test("Green: APPROVED with responseId and NOT_PROCESSED, an mdes attempt; a retry gets the same bytes")
    func approvedAndReplayed() throws {
        let fixture = try MDESFixture()
        let body = try fixture.authorizeBody(requestId: "req-green")
        let first = try fixture.post("authorizeService", body)
        #expect(first.status == 200, "\(first.text)")
        let answer = try #require(first.jsonObject())
        #expect(answer["responseId"] as? String == "req-green")
        #expect(answer["decision"] as? String == "APPROVED")
        #expect(answer["cvcResponse"] as? String == "NOT_PROCESSED")
        #expect(answer["services"] as? [String] == ["DIGITIZATION"])
        #expect(!first.text.contains(MDESFixture.pan))
        let retry = try fixture.post("authorizeService", body)
        #expect(retry.status == 200)
        #expect(retry.body == first.body)
        #expect(
            try fixture.count(
                "SELECT count(*) FROM provisioning_attempts WHERE channel = 'mdes' AND decision = 'APPROVED' AND card_id = 'card-1'"
            )
                == 1)
        #expect(
            try fixture.count(
                "SELECT count(*) FROM provisioning_attempts WHERE inputs ->> 'request.channel' = 'mdes' AND inputs ->> 'request.token_type' = 'CLOUD' AND inputs ->> 'device.form_factor' = 'PHONE' AND inputs ->> 'request.wallet_id' = '103'"
            )
                == 1)
        // Another body under the same requestId: refused, nothing more recorded.
        let other = try fixture.post("authorizeService", try fixture.authorizeBody(requestId: "req-green"))
        #expect(other.status == 400)
        #expect(other.jsonObject()?["errorCode"] as? String == "DUPLICATE_REQUEST_ID")
        #expect(other.jsonObject()?["responseId"] as? String == "req-green")
        #expect(try fixture.count("SELECT count(*) FROM provisioning_attempts") == 1)
    }

    @Test("A payload that does not open, or whose dataValidUntilTimestamp passed, is CRYPTOGRAPHY_ERROR, never a 500")
    func cryptographyErrors() throws {
        let fixture = try MDESFixture()
        var body = try #require(
            try JSONSerialization.jsonObject(with: Data(try fixture.authorizeBody(requestId: "req-bad").utf8))
                as? [String: Any])
        var info = try #require(body["fundingAccountInfo"] as? [String: Any])
        var envelope = try #require(info["encryptedPayload"] as? [String: Any])
        let key = try #require(envelope["encryptedKey"] as? String)
        envelope["encryptedKey"] = String(key.dropLast(2)) + (key.hasSuffix("00") ? "11" : "00")
        info["encryptedPayload"] = envelope
        body["fundingAccountInfo"] = info
        let altered = String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
        let expired = try fixture.authorizeBody(
            requestId: "req-expired", payload: MDESFixture.fundingAccount(validUntil: Date().addingTimeInterval(-60)))
        var unknownKey = envelope
        unknownKey["publicKeyFingerprint"] = String(repeating: "ab", count: 20)
        info["encryptedPayload"] = unknownKey
        body["fundingAccountInfo"] = info
        body["requestId"] = "req-unknown-key"
        let wrongKey = String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
        for text in [altered, expired, wrongKey] {
            let response = try fixture.post("authorizeService", text)
            #expect(response.status == 400, "\(response.text)")
            #expect(response.jsonObject()?["errorCode"] as? String == "CRYPTOGRAPHY_ERROR")
            #expect(response.jsonObject()?["responseId"] is String)
        }
        #expect(try fixture.count("SELECT count(*) FROM provisioning_attempts") == 0)
        #expect(try fixture.count("SELECT count(*) FROM mdes_requests") == 0)

        let notJSON = try fixture.post("authorizeService", "{not json")
        #expect(notJSON.status == 400)
        #expect(notJSON.jsonObject()?["errorCode"] as? String == "INVALID_JSON")
        let missing = try fixture.post("authorizeService", #"{"requestId":"r-missing","services":["DIGITIZATION"]}"#)
        #expect(missing.jsonObject()?["errorCode"] as? String == "INVALID_FIELD_VALUE")
        #expect(missing.jsonObject()?["responseId"] as? String == "r-missing")
        let unknownOperation = try fixture.post("getAccountInformation", #"{"requestId":"r"}"#)
        #expect(unknownOperation.status == 404)
    }

    @Test("Unknown members and enum values are tolerated")
    func unknownFields() throws {
        let fixture = try MDESFixture()
        let body = try fixture.authorizeBody(
            requestId: "req-new",
            extra: [
                "tokenType": "QUANTUM", "securityServicesInsights": ["riskScore": "3", "reasonCode": "X"],
                "services": ["DIGITIZATION", "TELEPORTATION"],
            ])
        let response = try fixture.post("authorizeService", body)
        #expect(response.status == 200, "\(response.text)")
        #expect(response.jsonObject()?["decision"] as? String == "APPROVED")
        #expect(response.jsonObject()?["services"] as? [String] == ["DIGITIZATION"])
    }

    @Test("Unknown card, wrong expiry, wallet DECLINED and a blocked card are DECLINED attempts")
    func declines() throws {
        let fixture = try MDESFixture()
        let cases: [(String, String)] = [
            (
                "unknown",
                try fixture.authorizeBody(requestId: "d1", payload: MDESFixture.fundingAccount(pan: "5105105105105100"))
            ),
            ("expiry", try fixture.authorizeBody(requestId: "d2", payload: MDESFixture.fundingAccount(month: "11"))),
            ("wallet", try fixture.authorizeBody(requestId: "d3", recommendation: "DECLINED")),
        ]
        for (name, body) in cases {
            let response = try fixture.post("authorizeService", body)
            #expect(response.status == 200, "\(name): \(response.text)")
            #expect(response.jsonObject()?["decision"] as? String == "DECLINED", "\(name)")
            #expect(response.jsonObject()?["activationMethods"] == nil, "\(name)")
        }
        #expect(
            try fixture.count(
                "SELECT count(*) FROM provisioning_attempts WHERE channel = 'mdes' AND flow = 'orange' AND decision = 'DECLINED'"
            )
                == 3)
        #expect(
            try fixture.count(
                "SELECT count(*) FROM provisioning_attempts WHERE hits @> '[{\"rule\":\"card_not_found\"}]'") == 1)
        #expect(
            try fixture.count(
                "SELECT count(*) FROM provisioning_attempts WHERE hits @> '[{\"rule\":\"expiry_mismatch\"}]'") == 1)
        try DecisionFixtures.card(
            fixture.app, "card-2", customer: "cust-1", pan: "5105105105105100", network: "mastercard", status: .blocked)
        let blocked = try fixture.post(
            "authorizeService",
            try fixture.authorizeBody(requestId: "d4", payload: MDESFixture.fundingAccount(pan: "5105105105105100")))
        #expect(blocked.jsonObject()?["decision"] as? String == "DECLINED")
        #expect(try fixture.count("SELECT count(*) FROM tokens") == 0)
    }

    @Test("A card registered for another network is DECLINED, recorded against the card")
    func anotherNetworkIsDeclined() throws {
        let fixture = try MDESFixture()
        let visa = "4111111111111111"
        try DecisionFixtures.card(fixture.app, "card-visa", customer: "cust-1", pan: visa, network: "visa")
        let answer = try fixture.post(
            "authorizeService",
            try fixture.authorizeBody(requestId: "v1", payload: MDESFixture.fundingAccount(pan: visa)))
        #expect(answer.status == 200, "\(answer.text)")
        #expect(answer.jsonObject()?["decision"] as? String == "DECLINED")
        #expect(
            try fixture.count(
                "SELECT count(*) FROM provisioning_attempts WHERE card_id = 'card-visa' AND decision = 'DECLINED'") == 1
        )
        #expect(try fixture.count("SELECT count(*) FROM tokens") == 0)
        // The Mastercard card of the same customer is still approved.
        let mastercard = try fixture.post("authorizeService", try fixture.authorizeBody(requestId: "v2"))
        #expect(mastercard.jsonObject()?["decision"] as? String == "APPROVED")
    }

    @Test("Without a readable requestId, responseId is the X-Request-Id cut to 64 characters")
    func responseIdStaysWithinSixtyFour() throws {
        let fixture = try MDESFixture()
        let long = String(repeating: "r", count: 128)
        for body in [#"{"services":["DIGITIZATION"]}"#, "{\"requestId\":\"\(String(repeating: "q", count: 65))\"}"] {
            let refused = try fixture.post(
                "authorizeService", body, headers: ["X-Client-Verify": "SUCCESS", "X-Request-Id": long])
            #expect(refused.status == 400, "\(refused.text)")
            #expect(refused.jsonObject()?["responseId"] as? String == String(long.prefix(64)))
        }
    }

    @Test("Yellow to active: methods, a delivered code, wrong then right code, activation, updates, suspicious events")
    func yellowLifecycle() throws {
        let fixture = try MDESFixture()
        let tur = "DWSPMC000000000fcb2f4136b2f4136a0532d2f4136a0532"
        let yellow = try fixture.post(
            "authorizeService",
            try fixture.authorizeBody(
                requestId: "y1", tokenReference: tur, recommendation: "REQUIRE_ADDITIONAL_AUTHENTICATION"))
        #expect(yellow.status == 200, "\(yellow.text)")
        #expect(yellow.jsonObject()?["decision"] as? String == "REQUIRE_ADDITIONAL_AUTHENTICATION")
        let methods = try #require(yellow.jsonObject()?["activationMethods"] as? [[String: String]])
        let types = methods.map { $0["type"] ?? "" }
        #expect(types.contains("TEXT_TO_CARDHOLDER_NUMBER"))
        #expect(types.contains("EMAIL_TO_CARDHOLDER_ADDRESS"))
        #expect(!yellow.text.contains("01012345678"))
        #expect(
            try fixture.count(
                "SELECT count(*) FROM tokens WHERE token_reference = '\(tur)' AND status = 'pending_verification' AND service = 'mdes'"
            )
                == 1)

        let ram = try fixture.post(
            "requestActivationMethods",
            String(
                decoding: try JSONSerialization.data(withJSONObject: [
                    "requestId": "ram-1", "services": ["DIGITIZATION"], "correlationId": "D98765432104",
                    "tokenType": "CLOUD",
                    "fundingAccountInfo": [
                        "tokenUniqueReference": tur, "encryptedPayload": try fixture.seal(MDESFixture.fundingAccount()),
                    ],
                ]), as: UTF8.self))
        #expect(ram.status == 200, "\(ram.text)")
        #expect((ram.jsonObject()?["activationMethods"] as? [[String: String]])?.map { $0["type"] ?? "" } == types)

        func dac(_ requestId: String, code: String?) throws -> TestHTTPResponse {
            var body: [String: Any] = [
                "requestId": requestId, "tokenUniqueReference": tur, "correlationId": "D98765432104",
                "activationMethod": ["type": "TEXT_TO_CARDHOLDER_NUMBER", "value": "010-****-5678"],
            ]
            if let code {
                body["activationCode"] = code
                body["expirationDateTime"] = MDESFixture.dateTime(Date().addingTimeInterval(600))
            }
            return try fixture.post(
                "deliverActivationCode",
                String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self))
        }
        let delivered = try dac("dac-1", code: "482913")
        #expect(delivered.status == 200, "\(delivered.text)")
        #expect(delivered.jsonObject()?["responseId"] as? String == "dac-1")
        #expect(try fixture.count("SELECT count(*) FROM challenges WHERE token_reference = '\(tur)'") == 1)
        #expect(try fixture.count("SELECT count(*) FROM outbox WHERE kind = 'notify'") == 1)
        // A repeated delivery re-sends: no second code, the same expiry.
        let again = try dac("dac-2", code: "482913")
        #expect(again.status == 200)
        #expect(try fixture.count("SELECT count(*) FROM challenges WHERE token_reference = '\(tur)'") == 1)
        #expect(try fixture.count("SELECT count(*) FROM outbox WHERE kind = 'notify'") == 2)
        // Re-sends count against the hourly send limit (3 messages): the fourth is refused, unsent.
        #expect(try dac("dac-3", code: "482913").status == 200)
        let refused = try dac("dac-4", code: "482913")
        #expect(refused.text.contains("ACTIVATION_METHOD_REFUSED"), "\(refused.text)")
        #expect(try fixture.count("SELECT count(*) FROM outbox WHERE kind = 'notify'") == 3)
        #expect(try fixture.count("SELECT count(*) FROM challenge_resends WHERE token_reference = '\(tur)'") == 2)

        func vac(_ requestId: String, _ code: String) throws -> String? {
            try fixture.post(
                "validateActivationCode",
                #"{"requestId":"\#(requestId)","tokenUniqueReference":"\#(tur)","correlationId":"D98765432104","activationCode":"\#(code)"}"#
            ).jsonObject()?["result"] as? String
        }
        #expect(try vac("vac-1", "000000") == "INCORRECT_CODE")
        #expect(try vac("vac-2", "482913") == "SUCCESS")
        #expect(try vac("vac-2", "482913") == "SUCCESS")  // the stored answer
        #expect(try vac("vac-3", "482913") == "EXPIRED_CODE")  // used: no longer valid

        let nsaBody: [String: Any] = [
            "requestId": "nsa-1", "services": ["DIGITIZATION"], "correlationId": "D98765432104",
            "tokenRequestorId": "50110030273", "tokenType": "CLOUD", "accountPanSuffix": "9999",
            "serviceRequestDateTime": MDESFixture.dateTime(Date()), "decision": "REQUIRE_ADDITIONAL_AUTHENTICATION",
            "tokenActivatedDateTime": MDESFixture.dateTime(Date()),
            "fundingAccountInfo": [
                "tokenUniqueReference": tur,
                "encryptedPayload": try fixture.seal(MDESFixture.fundingAccount(token: "5204731600014792")),
            ],
        ]
        let nsa = try fixture.post(
            "notifyServiceActivated",
            String(decoding: try JSONSerialization.data(withJSONObject: nsaBody), as: UTF8.self))
        #expect(nsa.status == 200, "\(nsa.text)")
        #expect(
            try fixture.count(
                "SELECT count(*) FROM tokens WHERE token_reference = '\(tur)' AND status = 'active' AND wallet ->> 'tokenSuffix' = '4792'"
            )
                == 1)

        let ntu = try fixture.post(
            "notifyTokenUpdated",
            #"{"requestId":"ntu-1","reasonCode":"STATUS_UPDATE","tokens":[{"tokenUniqueReference":"\#(tur)","status":"SUSPENDED","suspendedBy":["ISSUER"]},{"tokenUniqueReference":"DWSPMC-unknown","status":"ACTIVE"}]}"#
        )
        #expect(ntu.status == 200, "\(ntu.text)")
        #expect(
            try fixture.count("SELECT count(*) FROM tokens WHERE token_reference = '\(tur)' AND status = 'suspended'")
                == 1)
        #expect(
            try fixture.count(
                "SELECT count(*) FROM token_events WHERE token_reference = '\(tur)' AND source = 'mdes' AND event = 'suspended'"
            )
                == 1)
        let deleted = try fixture.post(
            "notifyTokenUpdated",
            #"{"requestId":"ntu-2","reasonCode":"DELETED_FROM_CONSUMER_APP","tokens":[{"tokenUniqueReference":"\#(tur)"}]}"#
        )
        #expect(deleted.status == 200)
        #expect(
            try fixture.count("SELECT count(*) FROM tokens WHERE token_reference = '\(tur)' AND status = 'deleted'")
                == 1)

        let nse = try fixture.post(
            "notifySuspiciousEvents",
            #"{"requestId":"nse-1","tokenUniqueReference":"\#(tur)","status":"ACTIVE","events":{"eventName":"REPLENISH","walletAtcStatus":{"unusedDiscarded":["12"]}}}"#
        )
        #expect(nse.status == 200, "\(nse.text)")
        let key = try fixture.app.apiKey(role: .analyst)
        let listed = try fixture.app.client.get(
            "/v1/admin/mdes/suspicious-events?tokenReference=\(tur)", headers: ["Authorization": "Bearer \(key)"])
        #expect(listed.status == 200, "\(listed.text)")
        let events = try #require(listed.jsonObject()?["events"] as? [[String: Any]])
        #expect(events.count == 1)
        #expect(events.first?["cardId"] as? String == "card-1")
        let anonymous = try fixture.app.client.get("/v1/admin/mdes/suspicious-events")
        #expect(anonymous.status == 401)
    }
}
