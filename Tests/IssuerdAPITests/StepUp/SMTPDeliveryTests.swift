import Foundation
import IssuerdCore
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// Step-up e-mail submitted by SMTP (`ISSUERD_EMAIL_PROVIDER=smtp`) to a real server on
/// loopback with STARTTLS and AUTH, through the outbox, and each challenge's delivery state in
/// the attempt's admin view.
@Suite("Step-up e-mail by SMTP")
struct SMTPDeliveryTests {
    static func app(_ server: TestMailServer, extra: [String: String] = [:]) throws -> TestApplication {
        var environment = StepUpFlowTests.fastOutbox
        environment.merge([
            "ISSUERD_EMAIL_PROVIDER": "smtp", "ISSUERD_SMTP_URL": server.url, "ISSUERD_SMTP_USER": server.user,
            "ISSUERD_SMTP_PASSWORD": server.password, "ISSUERD_SMTP_FROM": "otp@bank.example",
            "ISSUERD_SMTP_CA_FILE": server.caFile,
        ]) { $1 }
        environment.merge(extra) { $1 }
        return try TestApplication(environment: environment)
    }

    /// The step-up entries of the attempt that created the fixture's token.
    static func stepUps(_ app: TestApplication, _ fixture: StepUpFixture) throws -> [[String: Any]] {
        let attemptID = try app.pool.withConnection {
            try $0.query("SELECT attempt_id FROM tokens WHERE token_reference = \(fixture.tokenReference)").first!
                .decode("attempt_id", as: UUID.self)
        }
        let view = try app.client.get(
            "/v1/admin/attempts/\(attemptID.uuidString.lowercased())",
            headers: ["Authorization": "Bearer \(try app.apiKey(role: .analyst))"])
        #expect(view.status == 200)
        return try #require(view.jsonObject()?["stepUp"] as? [[String: Any]])
    }

    /// Waits until the challenge's delivery state is `state`, and returns its delivery.
    static func delivery(
        _ app: TestApplication, _ fixture: StepUpFixture, becomes state: String
    ) throws -> [String: Any]? {
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if let delivery = try stepUps(app, fixture).last?["delivery"] as? [String: Any],
                delivery["state"] as? String == state
            {
                return delivery
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return nil
    }

    @Test("A Korean code e-mail arrives over STARTTLS with AUTH; the code in it verifies; the admin view says sent")
    func korean() throws {
        let server = try TestMailServer()
        let app = try Self.app(server)
        let fixture = try StepUpFixture(app, locale: "ko_KR")
        #expect(try Self.stepUps(app, fixture).isEmpty)
        let created = try fixture.requestCode(app, method: "email-1")
        #expect(created.status == 201, "\(created.text)")
        let challengeID = try #require(created.jsonObject()?["challengeId"] as? String)

        let mail = try #require(server.wait(for: 1).first)
        #expect(mail.tls && mail.login == server.user)
        #expect(mail.rcptTos == [fixture.email])
        #expect(mail.header("From") == "otp@bank.example")
        #expect(mail.header("To") == fixture.email)
        #expect(mail.header("Message-ID") == "<issuerd.notify_\(challengeID)@bank.example>")
        #expect(mail.header("Date")?.hasSuffix("+0000") == true)
        #expect(mail.header("Content-Type") == "text/plain; charset=UTF-8")
        let subject = try #require(mail.header("Subject"))
        let decoded = subject.components(separatedBy: " ").compactMap { word -> Data? in
            guard word.hasPrefix("=?UTF-8?B?"), word.hasSuffix("?=") else { return nil }
            return Data(base64Encoded: String(word.dropFirst(10).dropLast(2)))
        }.reduce(Data(), +)
        #expect(String(decoding: decoded, as: UTF8.self) == "[Apple Pay] 카드 등록 인증번호 안내")
        #expect(mail.body.contains("카드 등록 인증번호: "))
        let code = try #require(mail.body.firstMatch(of: /인증번호: ([0-9]{6})/)?.1)
        #expect(try fixture.verify(app, code: String(code)).status == 200)

        let delivery = try #require(try Self.delivery(app, fixture, becomes: "sent"))
        #expect(delivery["provider"] as? String == "smtp")
        #expect(delivery["messageId"] as? String == "Q1")
    }

    @Test("A 5xx is a dead letter at once with the relay's reply (no address, no code); the challenge is undeliverable")
    func permanentRefusal() throws {
        let server = try TestMailServer()
        try server.answer("550 5.1.1 <hong.gildong@example.com>: Recipient address rejected: User unknown")
        let app = try Self.app(server, extra: ["ISSUERD_OUTBOX_MAX_ATTEMPTS": "10"])
        let fixture = try StepUpFixture(app)
        #expect(try fixture.requestCode(app, method: "email-1").status == 201)
        let delivery = try #require(try Self.delivery(app, fixture, becomes: "undeliverable"))
        #expect(delivery["provider"] as? String == "smtp")
        let detail = try #require(delivery["detail"] as? String)
        #expect(detail.contains("550 5.1.1 <[address]>: Recipient address rejected: User unknown"), "\(detail)")
        let stored = try app.pool.withConnection {
            try $0.query("SELECT status, attempts, last_error FROM outbox WHERE kind = 'notify'").first!
        }
        #expect(try stored.decode("status", as: String.self) == "dead")
        #expect(try stored.decode("attempts", as: Int.self) == 1)
        let lastError = try stored.decode("last_error", as: String.self)
        #expect(lastError.contains("550 5.1.1"))
        #expect(!lastError.contains(fixture.email))
    }

    @Test("A 4xx is retried with the outbox's backoff and goes out once the relay takes it")
    func transientRefusal() throws {
        let server = try TestMailServer()
        try server.answer("451 4.3.0 Mailbox busy, try again later")
        let app = try Self.app(server)
        let fixture = try StepUpFixture(app)
        #expect(try fixture.requestCode(app, method: "email-1").status == 201)
        let deadline = Date().addingTimeInterval(20)
        var attempts = 0
        while Date() < deadline && attempts < 2 {
            attempts = try app.pool.withConnection {
                try $0.query(
                    "SELECT attempts FROM outbox WHERE kind = 'notify' AND last_error LIKE 'rejected: SMTP 451%'"
                )
                .first?.decode("attempts", as: Int.self) ?? 0
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        #expect(attempts >= 2)
        #expect(
            try Self.stepUps(app, fixture).last?["delivery"].flatMap { $0 as? [String: Any] }?["state"] as? String
                == "queued")
        try server.answer(nil)
        #expect(server.wait(for: 1).count == 1)
        #expect(try Self.delivery(app, fixture, becomes: "sent") != nil)
    }

    @Test("The app method sends nothing and has no delivery; SMS without a provider of its own keeps the log provider")
    func otherMethods() throws {
        let server = try TestMailServer()
        let app = try Self.app(server)
        let fixture = try StepUpFixture(app)
        let created = try fixture.requestCode(app, method: "sms-1")
        let challengeID = try #require(created.jsonObject()?["challengeId"] as? String)
        #expect(StepUpFixture.loggedCode(app, challengeID: challengeID) != nil)
        let delivery = try #require(try Self.delivery(app, fixture, becomes: "sent"))
        #expect(delivery["provider"] as? String == "log")
        #expect(server.mails.isEmpty)
    }
}
