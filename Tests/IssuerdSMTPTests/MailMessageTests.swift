import Foundation
import Testing

@testable import IssuerdSMTP

@Suite("The step-up e-mail as written")
struct MailMessageTests {
    @Test("A Korean subject becomes RFC 2047 words of at most 75 characters that decode back to it")
    func koreanSubject() throws {
        let subject = "[Apple Pay] 카드 등록 인증번호 안내 — 본인이 요청하지 않았다면 고객센터로 연락해 주세요"
        let encoded = MailMessage.encodedHeader(subject)
        let words = encoded.components(separatedBy: "\r\n ")
        #expect(words.count > 1)
        var decoded: [UInt8] = []
        for word in words {
            #expect(word.count <= 75)
            #expect(word.hasPrefix("=?UTF-8?B?") && word.hasSuffix("?="))
            let base64 = String(word.dropFirst(10).dropLast(2))
            let bytes = try #require(Data(base64Encoded: base64))
            // Each word holds whole characters: it decodes as UTF-8 on its own.
            #expect(String(data: bytes, encoding: .utf8) != nil)
            decoded += bytes
        }
        #expect(String(decoding: decoded, as: UTF8.self) == subject)
        #expect(MailMessage.encodedHeader("Your code") == "Your code")
    }

    @Test("Message-ID comes from the outbox key: the same for every retry, nothing outside atext")
    func messageID() {
        let id = MailMessage.messageID(key: "notify:3f2a-9b:resend:r<1>", domain: "bank.example")
        #expect(id == "<issuerd.notify_3f2a-9b_resend_r_1_@bank.example>")
        #expect(MailMessage.messageID(key: "notify:3f2a-9b:resend:r<1>", domain: "bank.example") == id)
    }

    @Test("Headers, MIME and a base64 UTF-8 body; an address with a line break or brackets is refused")
    func message() throws {
        let message = MailMessage(
            from: "otp@bank.example", to: "hong@example.com", subject: "인증번호", body: "인증번호: 123456\n5분 동안 유효합니다.",
            messageID: "<issuerd.x@bank.example>", date: Date(timeIntervalSince1970: 1_796_000_000))
        let text = String(decoding: message.bytes, as: UTF8.self)
        let parts = text.components(separatedBy: "\r\n\r\n")
        #expect(parts.count == 2)
        let headers = parts[0].components(separatedBy: "\r\n")
        #expect(headers.contains("Date: Mon, 30 Nov 2026 00:53:20 +0000"))
        #expect(headers.contains("Message-ID: <issuerd.x@bank.example>"))
        #expect(headers.contains("Content-Type: text/plain; charset=UTF-8"))
        #expect(headers.contains("Content-Transfer-Encoding: base64"))
        let body = try #require(Data(base64Encoded: parts[1].replacingOccurrences(of: "\r\n", with: "")))
        #expect(String(decoding: body, as: UTF8.self) == "인증번호: 123456\r\n5분 동안 유효합니다.")
        #expect(parts[1].components(separatedBy: "\r\n").allSatisfy { $0.count <= 76 })
        #expect(MailAddress.isValid("hong@example.com"))
        for bad in ["hong@example.com\r\nRCPT TO:<x@y>", "<hong@example.com>", "hong", "a@b@c", "h ong@example.com"] {
            #expect(!MailAddress.isValid(bad), "\(bad)")
        }
    }

    @Test("The relay's queue id is read from Postfix's and Exim's final replies")
    func queueID() {
        #expect(SMTPClient.queueID(in: "250 2.0.0 Ok: queued as 4XkPzT1Rz2z9v") == "4XkPzT1Rz2z9v")
        #expect(SMTPClient.queueID(in: "250 OK id=1rYp2Q-000Abc-3x") == "1rYp2Q-000Abc-3x")
        #expect(SMTPClient.queueID(in: "250 Message accepted for delivery") == nil)
    }
}
