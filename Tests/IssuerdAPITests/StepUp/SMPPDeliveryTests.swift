import Foundation
import IssuerdCore
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// Step-up SMS by SMPP (`ISSUERD_SMS_PROVIDER=smpp`) to a real SMPP peer on loopback, through
/// the outbox, and the receipts' delivery state in the attempt's admin view.
@Suite("Step-up SMS by SMPP")
struct SMPPDeliveryTests {
    static func app(_ smsc: TestSMSC, sharing: TestApplication? = nil) throws -> TestApplication {
        var environment = StepUpFlowTests.fastOutbox
        environment.merge([
            "ISSUERD_SMS_PROVIDER": "smpp", "ISSUERD_SMPP_HOST": "127.0.0.1", "ISSUERD_SMPP_PORT": String(smsc.port),
            "ISSUERD_SMPP_SYSTEM_ID": "issuerd", "ISSUERD_SMPP_PASSWORD": "pw12345",
            "ISSUERD_SMPP_SOURCE_ADDR": "BANKOTP",
        ]) { $1 }
        return try TestApplication(environment: environment, sharing: sharing)
    }

    @Test(
        "A Korean code SMS goes as UCS-2 segments; its code verifies; the receipts make it delivered in the admin view")
    func delivered() throws {
        let smsc = try TestSMSC()
        let app = try Self.app(smsc)
        let fixture = try StepUpFixture(app, locale: "ko_KR")
        #expect(try fixture.requestCode(app, method: "sms-1").status == 201)
        #expect(smsc.wait { $0.submits.count >= 2 })
        // The simulator may take pipelined segments in another order: sort by segment number.
        let submits = smsc.submits.sorted { ($0.concatenation?.number ?? 0) < ($1.concatenation?.number ?? 0) }
        #expect(submits.allSatisfy { $0.dataCoding == 8 && $0.registeredDelivery == 1 })
        #expect(submits.allSatisfy { $0.destination == "01012345678" && $0.source == "BANKOTP" })
        let text = submits.map(\.text).joined()
        #expect(text.hasPrefix("[Apple Pay 카드 등록] 인증번호 "))
        let code = try #require(text.firstMatch(of: /인증번호 ([0-9]{6})/)?.1)
        #expect(try fixture.verify(app, code: String(code)).status == 200)

        let delivery = try #require(try SMTPDeliveryTests.delivery(app, fixture, becomes: "delivered"))
        #expect(delivery["provider"] as? String == "smpp")
        #expect(delivery["messageId"] as? String == submits.map(\.messageID).joined(separator: ","))
        #expect(smsc.wait { $0.receiptAnswers.count == submits.count })
        #expect(smsc.receiptAnswers.allSatisfy { $0.status == "0" })
    }

    @Test("An UNDELIV receipt makes the code undeliverable, so the app can offer another method")
    func undeliverable() throws {
        let smsc = try TestSMSC()
        try smsc.receipts("UNDELIV")
        let app = try Self.app(smsc)
        let fixture = try StepUpFixture(app)
        #expect(try fixture.requestCode(app, method: "sms-1").status == 201)
        let delivery = try #require(try SMTPDeliveryTests.delivery(app, fixture, becomes: "undeliverable"))
        #expect(delivery["detail"] as? String == "SMS centre receipt: UNDELIV")
    }

    @Test("A message the SMS centre accepted is not sent again, by this instance or another one started later")
    func notResent() throws {
        let smsc = try TestSMSC()
        let first = try Self.app(smsc)
        let fixture = try StepUpFixture(first)
        #expect(try fixture.requestCode(first, method: "sms-1").status == 201)
        #expect(try SMTPDeliveryTests.delivery(first, fixture, becomes: "delivered") != nil)
        let sent = smsc.submits.count
        let second = try Self.app(smsc, sharing: first)
        let other = try StepUpFixture(second)
        #expect(try other.requestCode(second, method: "sms-1").status == 201)
        #expect(try SMTPDeliveryTests.delivery(second, other, becomes: "delivered") != nil)
        #expect(smsc.submits.count == sent * 2)
    }
}
