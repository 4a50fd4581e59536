import Foundation
import IssuerdCore
import IssuerdTestSupport
import Testing

@testable import IssuerdSMPP

/// The session against a real SMPP peer (PyPI's smpp34 server, SMPP/smsc_simulator.py).
@Suite("SMPP session with an SMS centre")
struct SMPPSessionTests {
    static func session(_ smsc: TestSMSC, window: Int = 10) -> SMPPSession {
        SMPPSession(
            settings: SMPPSettings(
                host: "127.0.0.1", port: smsc.port, systemID: "issuerd", password: Redacted("pw12345"),
                sourceAddress: "BANKOTP", window: window, enquireLinkInterval: .seconds(1),
                responseTimeout: .seconds(5)),
            logger: Logger(label: "test", handler: DiscardingLogHandler()))
    }

    /// Receipts handed to the session's handler.
    final class Receipts: Sendable {
        let seen = Lock<[SMSReceipt]>([])
        var all: [SMSReceipt] { seen.withLock { $0 } }
        func handler() -> SMPPSession.ReceiptHandler {
            { receipts in
                self.seen.withLock { $0.append(contentsOf: receipts) }
                return true
            }
        }
    }

    @Test("A Korean text past 70 characters goes as UCS-2 segments that join; each receipt is matched and acknowledged")
    func koreanWithReceipts() throws {
        let smsc = try TestSMSC()
        let receipts = Receipts()
        let session = Self.session(smsc)
        session.start(receipts: receipts.handler())
        defer { session.stop(timeout: .seconds(2)) }
        let text = "[Apple Pay 카드 등록] 인증번호 482913 (5분 유효). 타인에게 절대 알려주지 마세요. 카드사는 인증번호를 묻지 않습니다."
        let ticket = try session.send(
            SMSText.segments(text, reference: 9), to: try #require(SMSAddress.destination("010-1234-5678")))
        let ids = try session.finish(ticket)
        #expect(ids.count == 2)
        // The simulator may take pipelined segments in another order: sort by segment number.
        let submits = smsc.submits.sorted { ($0.concatenation?.number ?? 0) < ($1.concatenation?.number ?? 0) }
        #expect(submits.map(\.messageID) == ids)
        #expect(
            submits.allSatisfy { $0.dataCoding == 8 && $0.registeredDelivery == 1 && $0.destination == "01012345678" })
        #expect(submits.map(\.source) == ["BANKOTP", "BANKOTP"])
        #expect(submits.compactMap(\.concatenation?.number) == [1, 2])
        #expect(submits.map(\.text).joined() == text)
        #expect(smsc.wait { $0.receiptAnswers.count == 2 })
        #expect(smsc.receiptAnswers.map(\.status) == ["0", "0"])
        #expect(Set(receipts.all.map(\.messageID)) == Set(ids))
        #expect(receipts.all.allSatisfy { $0.outcome == .delivered })
    }

    @Test("Throttled submit_sm are sent again after a pause; a window of 3 carries 30 messages")
    func throttledAndWindowed() throws {
        let smsc = try TestSMSC()
        try smsc.throttle(2)
        let session = Self.session(smsc, window: 3)
        session.start(receipts: { _ in true })
        defer { session.stop(timeout: .seconds(2)) }
        let destination = try #require(SMSAddress.destination("01012345678"))
        var tickets: [SMPPSession.Ticket] = []
        for index in 0..<30 {
            tickets.append(try session.send(SMSText.segments("code \(index)", reference: 0), to: destination))
        }
        let ids = try tickets.flatMap { try session.finish($0) }
        #expect(Set(ids).count == 30)
        #expect(smsc.submits.count == 30)
    }

    /// LeakSanitizer found every stopped session lost: it kept its own Thread, which held the
    /// session, so neither was ever freed (with its receipt handler and what that holds).
    @Test("A stopped session is freed once its thread has ended")
    func freedAfterStop() throws {
        let smsc = try TestSMSC()
        weak var freed: SMPPSession?
        do {
            let session = Self.session(smsc)
            session.start(receipts: { _ in true })
            let destination = try #require(SMSAddress.destination("01012345678"))
            _ = try session.finish(try session.send(SMSText.segments("bye", reference: 0), to: destination))
            session.stop(timeout: .seconds(10))
            freed = session
        }
        // The thread lets go of the session as it exits, just after stop() returns: wait for it,
        // with a deadline far past any slowdown, rather than for a fixed time.
        let deadline = Date().addingTimeInterval(30)
        while freed != nil && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        #expect(freed == nil, "the session outlived stop() and its thread")
    }

    @Test("After the SMS centre restarts (killed, sessions dropped) the session binds again and sends")
    func rebinds() throws {
        let smsc = try TestSMSC()
        let session = Self.session(smsc)
        session.start(receipts: { _ in true })
        defer { session.stop(timeout: .seconds(2)) }
        let destination = try #require(SMSAddress.destination("01012345678"))
        _ = try session.finish(try session.send(SMSText.segments("before", reference: 0), to: destination))
        try smsc.restart()
        var sent: [String] = []
        let deadline = Date().addingTimeInterval(20)
        while sent.isEmpty && Date() < deadline {
            if let ids = try? session.finish(try session.send(SMSText.segments("after", reference: 0), to: destination))
            {
                sent = ids
            }
        }
        #expect(sent.count == 1)
        #expect(smsc.submits.last?.text == "after")
        #expect(session.isBound)
    }
}
