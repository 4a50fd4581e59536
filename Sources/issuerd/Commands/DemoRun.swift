import Foundation
import IssuerdAPI
import IssuerdCore
import IssuerdCrypto

/// The steps of `issuerd demo`, each printed as it happens.
struct DemoRun {
    let http: DemoHTTP
    let adminKey: String
    let jwtSecret: String
    /// The `iss` and `aud` the server requires of app tokens, if any.
    let jwtIssuer: String?
    let jwtAudience: String?
    let tspSecret: String
    let certificates: [String]
    let leafKey: P256.KeyAgreement.PrivateKey

    func run() throws -> Bool {
        let suffix = BinaryEncoding.hexString(try SecureRandom.bytes(count: 3))
        let customer = "demo-\(suffix)"
        let admin = ["Authorization": "Bearer \(adminKey)"]
        step("operator creates customer \(customer) and two cards")
        let yearAgo = ISO8601DateFormatter().string(from: Date().addingTimeInterval(-365 * 86400))
        try expect(
            http.send(
                "POST", "/v1/admin/customers",
                json: [
                    "customerId": customer, "phoneNumber": "+82 10 1234 5678", "email": "hong.gildong@example.com",
                    "phoneChangedAt": yearAgo, "emailChangedAt": yearAgo, "addressChangedAt": yearAgo,
                ], headers: admin), [200, 201], "create customer")
        let pan1 = try Self.testPAN(prefix: "4")
        let pan2 = try Self.testPAN(prefix: "5")
        let card1 = try expect(
            http.send("POST", "/v1/admin/cards", json: card(customer, pan1, "visa"), headers: admin), [201],
            "create card 1")
        let card2 = try expect(
            http.send("POST", "/v1/admin/cards", json: card(customer, pan2, "mastercard"), headers: admin), [201],
            "create card 2")
        guard let cardID1 = card1["cardId"] as? String, let cardID2 = card2["cardId"] as? String else {
            return fail("no cardId returned")
        }
        say("cards \(cardID1) (visa ••\(pan1.suffix(4))) and \(cardID2) (mastercard ••\(pan2.suffix(4)))")

        let appToken = try DevelopmentCredentials.appToken(
            secret: jwtSecret, customerID: customer, issuer: jwtIssuer, audience: jwtAudience)
        let app = ["Authorization": "Bearer \(appToken)"]
        step("GREEN: the issuer app pushes card 1 to Apple Wallet (in-app provisioning)")
        let cards = try expect(http.send("GET", "/v1/cards", headers: app), [200], "list cards")
        say("GET /v1/cards → \((cards["cards"] as? [Any])?.count ?? 0) cards for the app")
        // A device of this run's own: the velocity rules count a device's attempts over days, so
        // one shared by every run would turn the next run's green yellow.
        let device = "demo-iphone-\(suffix)"
        let green = try http.send(
            "POST", "/v1/cards/\(cardID1)/apple-pay/provision", json: provision(device: device), headers: app)
        var ok = try report(green, expectedFlow: "green")
        if green.status == 200, let json = green.json { ok = try decrypt(json) && ok }

        step("YELLOW: a token service provider asks about card 1 typed into Wallet; the wallet recommends step-up")
        let authorize: [String: Any] = [
            "requestId": "demo-\(suffix)-1", "tokenReference": "DNITHE\(suffix.uppercased())0001",
            "tokenRequestorId": "40010030273",
            "tokenizationSource": "manual", "card": ["accountNumber": pan1, "expiration": "12/30"],
            "device": ["id": "demo-device-\(suffix)", "type": "phone", "locale": "ko_KR"],
            "wallet": [
                "deviceScore": 3, "accountScore": 4, "phoneNumberScore": 4,
                "recommendedDecision": "REQUIRE_ADDITIONAL_AUTHENTICATION", "reasonCodes": ["0A"],
            ],
            "activeTokenCount": 0,
        ]
        let body = Array(try JSONSerialization.data(withJSONObject: authorize, options: [.sortedKeys]))
        let signature = try DevelopmentCredentials.tspSignature(body: body, secret: tspSecret)
        let yellow = try http.send(
            "POST", "/v1/tsp/tokenization/authorize", headers: ["X-Issuerd-Signature": signature], rawBody: body)
        ok = try report(yellow, expectedFlow: "yellow") && ok
        if let methods = yellow.json?["activationMethods"] as? [[String: Any]] {
            for method in methods {
                say("  step-up method \(method["id"] ?? "") \(method["type"] ?? ""): \(method["value"] ?? "")")
            }
        }

        step("ORANGE: card 2 is reported lost, then the app tries to push it")
        try expect(
            http.send(
                "POST", "/v1/admin/cards/\(cardID2)/status", json: ["status": "lost", "reason": "demo"], headers: admin),
            [200], "report lost")
        let orange = try http.send(
            "POST", "/v1/cards/\(cardID2)/apple-pay/provision", json: provision(device: device), headers: app)
        ok = try report(orange, expectedFlow: "orange") && ok

        try recordOutcomes(green: attemptID(green), yellow: attemptID(yellow), orange: attemptID(orange), admin: admin)

        step(ok ? "all three cases came out as expected" : "some cases did not come out as expected (see above)")
        return ok
    }

    /// The dispute desk reports what became of the three decisions (the green one legitimate, the
    /// yellow and the orange one fraud), then the rules' performance over the last 24 hours is read
    /// back: the rules that decided these attempts now have precision and recall. Each run adds
    /// three new attempts with their outcomes, so the figures grow with every run.
    private func recordOutcomes(green: String?, yellow: String?, orange: String?, admin: [String: String]) throws {
        step("OUTCOMES: the dispute desk reports what became of the three decisions")
        var reports: [[String: Any]] = []
        if let green {
            reports.append([
                "attemptId": green, "outcome": "legitimate", "source": "cardholder",
                "note": "demo: the cardholder confirms adding the card",
            ])
        }
        if let yellow {
            reports.append([
                "attemptId": yellow, "outcome": "fraud", "source": "chargeback",
                "note": "demo: cardholder denies adding the card",
                "amountLost": ["value": 350_000, "currency": "KRW"],
            ])
        }
        if let orange {
            reports.append([
                "attemptId": orange, "outcome": "fraud", "source": "analyst",
                "note": "demo: the lost card was pushed by someone else",
            ])
        }
        guard !reports.isEmpty else { return say("no attempt ids to report outcomes for") }
        let recorded = try expect(
            http.send("POST", "/v1/admin/outcomes", json: ["outcomes": reports], headers: admin), [200], "outcomes")
        say("POST /v1/admin/outcomes → recorded \(recorded["recorded"] ?? 0), unchanged \(recorded["unchanged"] ?? 0)")
        let performance = try expect(
            http.send("GET", "/v1/admin/rules/performance", headers: admin), [200], "rule performance")
        if let totals = performance["totals"] as? [String: Any] {
            say(
                "GET /v1/admin/rules/performance → last 24 h: \(totals["attempts"] ?? 0) attempts, \(totals["fraud"] ?? 0) confirmed fraud, "
                    + "\(totals["legitimate"] ?? 0) legitimate, \(totals["fraudPassedGreen"] ?? 0) fraud passed green")
        }
        let rules = (performance["rules"] as? [[String: Any]] ?? []).filter { ($0["decided"] as? Int ?? 0) > 0 }
        for rule in rules {
            let share = { (value: Any?) in (value as? Double).map { String(format: "%.2f", $0) } ?? "-" }
            say(
                "  \(rule["ruleId"] ?? "?") (\(rule["mode"] ?? "?")): decided \(rule["decided"] ?? 0), fraud \(rule["fraud"] ?? 0), "
                    + "legitimate \(rule["legitimate"] ?? 0), precision \(share(rule["precision"])), recall \(share(rule["recall"]))"
            )
        }
        say("the console's Rule hits page and `issuerd rules performance` show the same figures")
    }

    private func card(_ customer: String, _ pan: String, _ network: String) -> [String: Any] {
        [
            "customerId": customer, "accountNumber": pan, "expiration": "12/30", "cardholderName": "HONG GILDONG",
            "paymentNetwork": network, "localizedDescription": "Demo \(network.capitalized)", "country": "KR",
        ]
    }

    private func provision(device: String) throws -> [String: Any] {
        [
            "certificates": certificates, "nonce": BinaryEncoding.base64String(try SecureRandom.bytes(count: 4)),
            "nonceSignature": BinaryEncoding.base64String(try SecureRandom.bytes(count: 64)),
            "encryptionScheme": "ECC_V2",
            "channel": "in_app", "device": ["id": device, "type": "phone", "locale": "ko_KR"],
        ]
    }

    /// Opens the pass data as Apple would, with the leaf's private key (ECC_V2, spec section 2).
    private func decrypt(_ json: [String: Any]) throws -> Bool {
        guard let sealed = (json["encryptedPassData"] as? String).flatMap({ Data(base64Encoded: $0) }),
            let ephemeral = (json["ephemeralPublicKey"] as? String).flatMap({ Data(base64Encoded: $0) })
        else { return fail("the answer lacks encryptedPassData or ephemeralPublicKey") }
        let secret = try leafKey.sharedSecretFromKeyAgreement(
            with: P256.KeyAgreement.PublicKey(x963Representation: Array(ephemeral)))
        let key = try ConcatenationKDF.deriveKey(
            from: secret, otherInfo: ECCV2Encryptor.otherInfo(ephemeralPublicKey: Array(ephemeral)))
        let plaintext = try AES256GCM.open(Array(sealed), using: key, nonce: [UInt8](repeating: 0, count: 12))
        guard let payload = try JSONSerialization.jsonObject(with: Data(plaintext)) as? [String: String],
            let pan = payload["primaryAccountNumber"].flatMap(PrimaryAccountNumber.init)
        else { return fail("the pass data did not decrypt to the expected JSON") }
        say(
            "decrypted with the leaf key: PAN \(pan.masked), expiration \(payload["expiration"] ?? "?"), name \(payload["name"] ?? "?"), nonce \(payload["nonce"] ?? "?")"
        )
        say(
            "activationData: \(((json["activationData"] as? String).flatMap { Data(base64Encoded: $0) }?.count) ?? 0) bytes"
        )
        return true
    }

    private func report(_ answer: DemoHTTP.Answer, expectedFlow: String) throws -> Bool {
        let decision =
            answer.json?["decision"] as? [String: Any] ?? answer.json?["error"] as? [String: Any] ?? answer.json ?? [:]
        let flow = (decision["flow"] as? String) ?? (answer.json?["flow"] as? String) ?? "?"
        let reasons = (decision["reasons"] as? [[String: Any]] ?? answer.json?["reasons"] as? [[String: Any]] ?? [])
            .map { "\($0["rule"] ?? "")" }
        say(
            "HTTP \(answer.status), flow \(flow)"
                + ((answer.json?["decision"] as? String).map { ", decision \($0)" } ?? "")
                + (reasons.isEmpty ? "" : ", reasons: \(reasons.joined(separator: ", "))"))
        if let attempt = decision["attemptId"] ?? answer.json?["attemptId"] {
            say("attempt \(attempt) (issuerd rules explain \(attempt))")
        }
        guard flow == expectedFlow else {
            return fail("expected \(expectedFlow), got \(flow): \(answer.text.prefix(300))")
        }
        return true
    }

    /// The attempt id an answer names, if any.
    private func attemptID(_ answer: DemoHTTP.Answer) -> String? {
        let decision = answer.json?["decision"] as? [String: Any] ?? answer.json?["error"] as? [String: Any]
        return (decision?["attemptId"] ?? answer.json?["attemptId"]) as? String
    }

    @discardableResult
    private func expect(_ answer: DemoHTTP.Answer, _ statuses: Set<Int>, _ what: String) throws -> [String: Any] {
        guard statuses.contains(answer.status) else {
            throw CommandFailure("\(what): HTTP \(answer.status): \(answer.text.prefix(300))")
        }
        return answer.json ?? [:]
    }

    private func step(_ text: String) { print("\n== \(text)") }
    private func say(_ text: String) { print("   \(text)") }
    private func fail(_ text: String) -> Bool {
        print("   !! \(text)")
        return false
    }

    /// A random PAN that passes the Luhn check (never a real card: 16 random digits under a test prefix).
    static func testPAN(prefix: String) throws -> String {
        var digits = prefix + (try SecureRandom.bytes(count: 14)).map { String($0 % 10) }.joined()
        for check in 0...9 where PrimaryAccountNumber(digits + String(check)) != nil {
            digits += String(check)
            break
        }
        return digits
    }
}
