import Foundation
import IssuerdCrypto
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// Visa cards pushed to Google Pay and Samsung Pay, and Mastercard cards pushed to Samsung Pay,
/// over HTTP against PostgreSQL: Visa's encrypted payment instrument opened by jwcrypto with
/// SHA-256 of the shared secret, Mastercard's opaque card by Mastercard's library.
@Suite("Visa push and Samsung Pay push")
struct VisaPushTests {
    static let secret = "throwaway-visa-shared-secret"
    static let apiKey = "VISA-ENC-API-KEY-1"
    static let clientAppID = "com.example.bank"

    static func app() throws -> TestApplication {
        let files = try TestScratch.directory("issuerd-visa-push")
        var environment = try GooglePayFixtures.environment(directory: files, pgp: nil)
        let secretFile = files.appendingPathComponent("visa-shared-secret")
        try "\(secret)\n".write(to: secretFile, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: secretFile.path)
        environment["ISSUERD_VISA_ENCRYPTION_API_KEY"] = apiKey
        environment["ISSUERD_VISA_ENCRYPTION_SHARED_SECRET"] = secretFile.path
        environment["ISSUERD_VISA_CLIENT_APP_ID"] = clientAppID
        return try TestApplication(environment: environment, rulesDirectory: try GooglePayFixtures.rules())
    }

    static func google(
        _ app: TestApplication, card: String, customer: String = "cust-1",
        device: [String: Any] = GooglePayPushTests.phone,
        walletInfo: [String: Any]? = ["deviceId": "gp-device-1", "walletAccountId": "gp-wallet-1"]
    ) throws -> TestHTTPResponse {
        var body: [String: Any] = ["device": device]
        if let walletInfo { body["walletInfo"] = walletInfo }
        return try GooglePayFixtures.post(
            app, "google-pay/push-provisioning", card: card, customer: customer, body: body)
    }

    static func samsung(
        _ app: TestApplication, card: String, customer: String = "cust-1",
        device: [String: Any] = GooglePayPushTests.phone,
        walletInfo: [String: Any]? = ["deviceId": "ss-device-1", "walletUserId": "ss-user-1"]
    ) throws -> TestHTTPResponse {
        var body: [String: Any] = ["device": device]
        if let walletInfo { body["walletInfo"] = walletInfo }
        return try GooglePayFixtures.post(
            app, "samsung-pay/push-provisioning", card: card, customer: customer, body: body)
    }

    /// Opens a compact JWE with jwcrypto, the key SHA-256(secret) computed in Python.
    static func open(_ jwe: String, secret: String = secret) throws -> [String: Any] {
        guard let python = ProcessInfo.processInfo.environment["ISSUERD_TEST_PYTHON"], !python.isEmpty else {
            throw TestFailure("ISSUERD_TEST_PYTHON is not set: run the tests through scripts/test")
        }
        let script = TestApplication.repositoryRoot.appendingPathComponent(
            "Tests/IssuerdCryptoTests/Oracle/open_jwe.py")
        let output = try ExternalProcess.run(
            python, [script.path], input: try JSONSerialization.data(withJSONObject: ["jwe": jwe, "secret": secret]))
        guard output.status == 0 else { throw TestFailure("jwcrypto oracle failed: \(output.stderr)") }
        guard let answer = try JSONSerialization.jsonObject(with: output.stdout) as? [String: Any] else {
            throw TestFailure("the oracle answered no object")
        }
        return answer
    }

    /// Checks every header parameter and plaintext field of a Visa payload, and returns the oracle's answer.
    @discardableResult
    static func checkVisa(
        _ jwe: String, requestor: String, deviceID: String, accountID: String, verified: Bool, pushedAt: Date
    ) throws -> [String: Any] {
        let opened = try open(jwe)
        #expect(opened["opened"] as? Bool == true, "\(opened)")
        let header = try #require(opened["header"] as? [String: Any])
        #expect(header["alg"] as? String == "A256GCMKW")
        #expect(header["enc"] as? String == "A256GCM")
        #expect(header["kid"] as? String == apiKey)
        #expect(header["typ"] as? String == "JOSE")
        #expect(header["channelSecurityContext"] as? String == "SHARED_SECRET")
        let iat = try #require(Int((header["iat"] as? String) ?? ""))
        #expect(abs(Double(iat) - pushedAt.timeIntervalSince1970) < 120)
        #expect(header["iv"] is String && header["tag"] is String)
        #expect(header.count == 8)

        let text = try #require((opened["plaintext"] as? String)?.data(using: .utf8))
        let plaintext = try #require(try JSONSerialization.jsonObject(with: text) as? [String: Any])
        #expect(plaintext["accountNumber"] as? String == DecisionFixtures.visaPAN)
        #expect(plaintext["name"] as? String == "HONG GILDONG")
        let expiry = try #require(plaintext["expirationDate"] as? [String: Any])
        #expect(expiry["month"] as? String == "12" && expiry["year"] as? String == "30")
        // The issuer holds no CVV2 and, of the address, only the card's country.
        #expect(plaintext["cvv2"] == nil)
        #expect(plaintext["billingAddress"] as? [String: String] == ["country": "KR"])
        let provider = try #require(plaintext["provider"] as? [String: Any])
        #expect(provider["clientAppID"] as? String == clientAppID)
        #expect(provider["clientDeviceID"] as? String == deviceID)
        #expect(provider["clientWalletProvider"] as? String == requestor)
        #expect(provider["clientWalletAccountID"] as? String == accountID)
        #expect(provider["intent"] as? String == "PUSH_PROV_MOBILE")
        #expect(provider["isIDnV"] as? String == (verified ? "true" : "false"))
        #expect(provider.count == 6)
        #expect(plaintext.count == 5)
        return opened
    }

    @Test("Google Pay, Visa: green carries isIDnV true for Google's requestor id; a wrong secret does not open it")
    func googleVisaGreen() throws {
        let app = try Self.app()
        try GooglePayFixtures.cardholder(app, network: "visa")
        let started = Date()
        let response = try Self.google(app, card: "card-visa")
        #expect(response.status == 200, "\(response.text)")
        let body = try #require(response.jsonObject())
        #expect((body["decision"] as? [String: Any])?["flow"] as? String == "green")
        #expect(body["tokenServiceProvider"] as? String == "visa")
        #expect(body["network"] as? String == "visa")
        #expect(body["lastDigits"] as? String == "1111")
        #expect(body["displayName"] as? String == "Visa •••• 1111")
        #expect(!response.text.contains(DecisionFixtures.visaPAN))
        let jwe = try #require(body["opaquePaymentCard"] as? String)
        #expect(jwe.split(separator: ".").count == 5)
        try Self.checkVisa(
            jwe, requestor: "40010075001", deviceID: "gp-device-1", accountID: "gp-wallet-1", verified: true,
            pushedAt: started)
        #expect(try Self.open(jwe, secret: Self.secret + "!")["opened"] as? Bool == false)
        #expect(
            try DecisionFixtures.count(
                app, "SELECT count(*) FROM provisioning_attempts WHERE channel = 'google_pay' AND flow = 'green'") == 1)
    }

    @Test("Google Pay, Visa: yellow carries isIDnV false; two pushes share no content key or IV")
    func googleVisaYellow() throws {
        let app = try Self.app()
        try GooglePayFixtures.cardholder(app, network: "visa")
        let watch: [String: Any] = ["id": "watch-1", "type": "watch"]
        var opened: [[String: Any]] = []
        for _ in 0..<2 {
            let started = Date()
            let response = try Self.google(app, card: "card-visa", device: watch)
            #expect(response.status == 200, "\(response.text)")
            let body = try #require(response.jsonObject())
            #expect((body["decision"] as? [String: Any])?["flow"] as? String == "yellow")
            #expect(Set(body["stepUpMethods"] as? [String] ?? []) == ["sms", "app"])
            opened.append(
                try Self.checkVisa(
                    try #require(body["opaquePaymentCard"] as? String), requestor: "40010075001",
                    deviceID: "gp-device-1", accountID: "gp-wallet-1", verified: false, pushedAt: started))
        }
        for field in ["cek", "wrapIV", "contentIV"] {
            let values = opened.compactMap { $0[field] as? String }
            #expect(values.count == 2 && values[0] != values[1], "\(field) repeated")
        }
    }

    @Test(
        "Visa refusals: orange is 403 with no payload; another customer's card 404; no wallet ids 400; unconfigured 422 on both routes"
    )
    func visaRefusals() throws {
        let app = try Self.app()
        try DecisionFixtures.customer(app, "cust-1")
        try DecisionFixtures.customer(app, "cust-2")
        try DecisionFixtures.card(app, "card-blocked", customer: "cust-1", pan: "4000056655665556", status: .blocked)
        try DecisionFixtures.card(app, "card-visa", customer: "cust-1")
        try DecisionFixtures.card(app, "card-other", customer: "cust-2", pan: "4012888888881881")

        for response in [try Self.google(app, card: "card-blocked"), try Self.samsung(app, card: "card-blocked")] {
            #expect(response.status == 403)
            let error = try #require(response.jsonObject()?["error"] as? [String: Any])
            #expect(error["code"] as? String == "provisioning_declined")
            #expect(error["flow"] as? String == "orange")
            #expect(!response.text.contains("opaquePaymentCard") && !response.text.contains("provisionPayload"))
            #expect(!response.text.contains("eyJ"))
        }
        #expect(try Self.google(app, card: "card-other").status == 404)
        #expect(try Self.samsung(app, card: "card-other").status == 404)

        let missing = try Self.google(app, card: "card-visa", walletInfo: ["deviceId": "gp-device-1"])
        #expect(missing.status == 400)
        #expect((missing.jsonObject()?["error"] as? [String: Any])?["field"] as? String == "walletInfo.walletAccountId")
        #expect(try Self.samsung(app, card: "card-visa", walletInfo: nil).status == 400)
        #expect(
            try Self.samsung(app, card: "card-visa", walletInfo: ["deviceId": "", "walletUserId": "u"]).status == 400)
        #expect(
            try DecisionFixtures.count(app, "SELECT count(*) FROM provisioning_attempts WHERE flow = 'orange'") == 2)
        #expect(try DecisionFixtures.count(app, "SELECT count(*) FROM provisioning_attempts") == 2)

        // Without the Visa settings a Visa card's push is still 422, on both routes.
        let bare = try TestApplication()
        try GooglePayFixtures.cardholder(bare, network: "visa")
        for response in [try Self.google(bare, card: "card-visa"), try Self.samsung(bare, card: "card-visa")] {
            #expect(response.status == 422)
            #expect(
                (response.jsonObject()?["error"] as? [String: Any])?["code"] as? String == "visa_push_not_configured")
        }
    }

    @Test("Samsung Pay, Visa: Samsung's requestor id and the SDK's ids, tokenizationProvider VI, channel samsung_pay")
    func samsungVisa() throws {
        let app = try Self.app()
        try GooglePayFixtures.cardholder(app, network: "visa")
        let started = Date()
        let response = try Self.samsung(app, card: "card-visa")
        #expect(response.status == 200, "\(response.text)")
        let body = try #require(response.jsonObject())
        #expect((body["decision"] as? [String: Any])?["flow"] as? String == "green")
        #expect(body["tokenizationProvider"] as? String == "VI")
        #expect(body["network"] as? String == "visa")
        #expect(body["lastDigits"] as? String == "1111")
        #expect(body["displayName"] as? String == "Visa •••• 1111")
        #expect(body["stepUpMethods"] == nil)
        try Self.checkVisa(
            try #require(body["provisionPayload"] as? String), requestor: "40010043095", deviceID: "ss-device-1",
            accountID: "ss-user-1", verified: true, pushedAt: started)
        let attemptID = try #require(body["attemptId"] as? String)
        #expect(
            try DecisionFixtures.count(
                app,
                "SELECT count(*) FROM provisioning_attempts WHERE attempt_id = '\(attemptID)' AND channel = 'samsung_pay' AND decision = 'APPROVED'"
            ) == 1)

        // request.wallet names Samsung Pay on its route: the tablet rule makes it yellow there, not on Google's.
        let tablet: [String: Any] = ["id": "tab-1", "type": "tablet"]
        let yellow = try Self.samsung(app, card: "card-visa", device: tablet)
        #expect(yellow.status == 200, "\(yellow.text)")
        let yellowBody = try #require(yellow.jsonObject())
        let decision = try #require(yellowBody["decision"] as? [String: Any])
        #expect(decision["flow"] as? String == "yellow")
        #expect((decision["reasons"] as? [[String: Any]])?.first?["rule"] as? String == "test.samsung_tablet")
        #expect(yellowBody["stepUpMethods"] as? [String] == ["app"])
        try Self.checkVisa(
            try #require(yellowBody["provisionPayload"] as? String), requestor: "40010043095",
            deviceID: "ss-device-1", accountID: "ss-user-1", verified: false, pushedAt: started)
        let google = try Self.google(app, card: "card-visa", device: tablet)
        #expect((google.jsonObject()?["decision"] as? [String: Any])?["flow"] as? String == "green")
    }

    @Test(
        "Samsung Pay, Mastercard: the MDES opaque card Mastercard's library opens, its TAV valid; tokenizationProvider MI"
    )
    func samsungMastercard() throws {
        let app = try Self.app()
        try GooglePayFixtures.cardholder(app, network: "mastercard")
        // Mastercard's payload carries no wallet ids: the SDK's are optional for it.
        let response = try Self.samsung(app, card: "card-mc", walletInfo: nil)
        #expect(response.status == 200, "\(response.text)")
        let body = try #require(response.jsonObject())
        #expect(body["tokenizationProvider"] as? String == "MI")
        #expect(body["network"] as? String == "mastercard")
        #expect(body["lastDigits"] as? String == "9999")
        let opened = try GooglePayFixtures.openMastercard(app, try #require(body["provisionPayload"] as? String))
        let plaintext = try #require(opened["plaintext"] as? [String: Any])
        let card = try #require(plaintext["cardAccountData"] as? [String: Any])
        #expect(card["accountNumber"] as? String == DecisionFixtures.mastercardPAN)
        #expect(card["expiryMonth"] as? String == "07")
        #expect(card["expiryYear"] as? String == "31")
        #expect((plaintext["accountHolderData"] as? [String: Any])?["accountHolderName"] as? String == "HONG GILDONG")
        #expect(plaintext["source"] as? String == "ACCOUNT_ADDED_VIA_APPLICATION")
        #expect(opened["tavValid"] as? Bool == true)
        #expect(
            try DecisionFixtures.count(
                app, "SELECT count(*) FROM provisioning_attempts WHERE channel = 'samsung_pay' AND flow = 'green'") == 1
        )
    }

    @Test("Samsung Wallet's app-to-app path reaches the same activation function as Google's")
    func samsungActivationRoute() throws {
        let app = try Self.app()
        try GooglePayFixtures.cardholder(app, network: "visa")
        let response = try GooglePayFixtures.post(
            app, "samsung-pay/activations", card: "card-visa", customer: "cust-1",
            body: ["tokenReference": "DNITHE0000"])
        #expect(response.status == 200, "\(response.text)")
        #expect(response.jsonObject()?["result"] as? String == "declined")
        #expect(response.jsonObject()?["reason"] as? String == "token_not_found")
    }
}
