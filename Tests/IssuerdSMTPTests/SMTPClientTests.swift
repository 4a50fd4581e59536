import Foundation
import IssuerdCore
import IssuerdTestSupport
import Testing

@testable import IssuerdSMTP

/// libcurl against a real SMTP server on loopback (aiosmtpd): STARTTLS, the certificate
/// checked against the run's CA, AUTH, and the server's replies classified.
@Suite("SMTP submission through libcurl")
struct SMTPClientTests {
    static func client(_ server: TestMailServer, caFile: String? = nil, password: String? = nil) -> SMTPClient {
        SMTPClient(
            settings: SMTPSettings(
                url: server.url, user: server.user, password: Redacted(password ?? server.password),
                from: "otp@bank.example", caFile: caFile ?? server.caFile, timeout: .seconds(10)))
    }

    static func korean(to address: String = "hong.gildong@example.com") -> MailMessage {
        MailMessage(
            from: "otp@bank.example", to: address, subject: "[Apple Pay] 카드 등록 인증번호 안내",
            body: "Apple Pay 카드 등록 인증번호: 482913\n5분 동안 유효합니다.",
            messageID: MailMessage.messageID(key: "notify:7c1e", domain: "bank.example"), date: Date())
    }

    @Test("A Korean message goes over STARTTLS with AUTH; the server reads its headers and code")
    func delivered() throws {
        let server = try TestMailServer()
        let accepted = try Self.client(server).send(
            Self.korean().bytes, from: "otp@bank.example", to: "hong.gildong@example.com")
        #expect(accepted.queueID == "Q1")
        let mail = try #require(server.wait(for: 1).first)
        #expect(mail.tls)
        #expect(mail.login == server.user)
        #expect(mail.rcptTos == ["hong.gildong@example.com"])
        #expect(mail.header("Message-ID") == "<issuerd.notify_7c1e@bank.example>")
        #expect(mail.header("Date") != nil)
        let subject = try #require(mail.header("Subject"))
        #expect(subject.hasPrefix("=?UTF-8?B?"))
        #expect(subject.contains("인증") == false)
        #expect(mail.body.contains("인증번호: 482913"))
    }

    @Test("A 4xx reply is transient, a 5xx permanent, each with the server's own reply")
    func refusals() throws {
        let server = try TestMailServer()
        try server.answer("451 4.3.0 Mailbox busy, try again later")
        let message = Self.korean().bytes
        #expect(
            throws: SMTPClient.Failure(kind: .transient, code: 451, reply: "451 4.3.0 Mailbox busy, try again later")
        ) {
            try Self.client(server).send(message, from: "otp@bank.example", to: "hong.gildong@example.com")
        }
        try server.answer("550 5.1.1 <hong.gildong@example.com>: Recipient address rejected: User unknown")
        #expect(
            throws: SMTPClient.Failure(
                kind: .permanent, code: 550,
                reply: "550 5.1.1 <hong.gildong@example.com>: Recipient address rejected: User unknown")
        ) {
            try Self.client(server).send(message, from: "otp@bank.example", to: "hong.gildong@example.com")
        }
        #expect(server.mails.isEmpty)
    }

    @Test("A certificate from another CA, or a wrong password, is a transport failure: retried, never sent")
    func refusedSessions() throws {
        let server = try TestMailServer()
        let other = try TestMailServer()
        let message = Self.korean().bytes
        do {
            _ = try Self.client(server, caFile: other.caFile).send(
                message, from: "otp@bank.example", to: "hong.gildong@example.com")
            Issue.record("sent to a server whose certificate the CA did not sign")
        } catch {
            #expect(error.kind == .transport)
        }
        do {
            _ = try Self.client(server, password: "wrong-password").send(
                message, from: "otp@bank.example", to: "hong.gildong@example.com")
            Issue.record("sent with a wrong password")
        } catch {
            #expect(error.kind == .transport)
            #expect(error.code == 535)
        }
        #expect(server.mails.isEmpty)
    }
}
