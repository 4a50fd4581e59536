import Testing

@testable import IssuerdSMPP

@Suite("SMS text as SMPP carries it")
struct SMSTextTests {
    @Test("Up to 70 UCS-2 characters is one segment without a header")
    func oneSegment() {
        let text = String(repeating: "인", count: 70)
        let segments = SMSText.segments(text, reference: 7)
        #expect(segments.count == 1)
        #expect(segments[0].esmClass == 0)
        #expect(segments[0].bytes.count == 140)
        #expect(Array(segments[0].bytes.prefix(2)) == [0xC7, 0x78])
    }

    @Test("Past 70, segments of 67 with a concatenation header each; the text comes back whole")
    func concatenated() {
        let text = "[Apple Pay 카드 등록] 인증번호 482913 (5분 유효). 타인에게 절대 알려주지 마세요. 카드사는 인증번호를 묻지 않습니다."
        #expect(text.utf16.count > 70)
        let segments = SMSText.segments(text, reference: 0xA5)
        #expect(segments.count == 2)
        var units: [UInt16] = []
        for (index, segment) in segments.enumerated() {
            #expect(segment.esmClass == 0x40)
            #expect(Array(segment.bytes.prefix(6)) == [5, 0, 3, 0xA5, 2, UInt8(index + 1)])
            #expect(segment.bytes.count <= 140)
            let body = segment.bytes.dropFirst(6)
            units += stride(from: body.startIndex, to: body.endIndex, by: 2).map {
                UInt16(body[$0]) << 8 | UInt16(body[$0 + 1])
            }
        }
        #expect(String(decoding: units, as: UTF16.self) == text)
    }

    @Test("A surrogate pair is never split between segments")
    func surrogates() {
        let text = String(repeating: "가", count: 66) + "😀" + String(repeating: "나", count: 10)
        let segments = SMSText.segments(text, reference: 1)
        #expect(segments[0].bytes.count == 6 + 66 * 2)
    }

    @Test("Receipts by TLV or by appendix B text; addresses as SMPP wants them")
    func receiptsAndAddresses() {
        let text = Array(
            "id:41d802000001 sub:001 dlvrd:001 submit date:2612061200 done date:2612061200 stat:DELIVRD err:000 text:"
                .utf8)
        #expect(
            SMSReceipt(text: text, receiptedID: "", messageState: 0)
                == SMSReceipt(messageID: "41d802000001", stat: "DELIVRD"))
        #expect(SMSReceipt(text: [], receiptedID: "abc", messageState: 5)?.outcome == .undeliverable)
        #expect(SMSReceipt(text: [], receiptedID: "", messageState: 0) == nil)
        #expect(SMSAddress.destination("010-1234-5678") == SMSAddress(ton: 0, npi: 1, address: "01012345678"))
        #expect(SMSAddress.destination("+82 10 1234 5678") == SMSAddress(ton: 1, npi: 1, address: "821012345678"))
        #expect(SMSAddress.destination("010-1234-5678; DROP") == nil)
        #expect(SMSAddress.source("BANKOTP") == SMSAddress(ton: 5, npi: 0, address: "BANKOTP"))
        #expect(SMSAddress.source("15881234") == SMSAddress(ton: 0, npi: 1, address: "15881234"))
        #expect(SMSAddress.source("TWELVELETTER") == nil)
    }
}
