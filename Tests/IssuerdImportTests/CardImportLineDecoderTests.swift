import Foundation
import IssuerdCore
import IssuerdImport
import IssuerdTestSupport
import IssuerdWire
import Testing

/// The import's own decoder for plain lines: whenever it returns a record, `JSONDecoder` (the
/// API's decoder) returns the same one from the same bytes; anything else it leaves to it.
@Suite("Bulk card import: the plain-line decoder agrees with JSONDecoder")
struct CardImportLineDecoderTests {
    private func reference(_ line: String) -> CardImport.Record? {
        try? JSONCoding.decoder.decode(CardImport.Record.self, from: Data(line.utf8))
    }

    private static let plain = [
        #"{"cardId":"card-1","customerId":"cust-1","accountNumber":"4111111111111111","expiration":"12/29","cardholderName":"KIM MINJI","paymentNetwork":"visa"}"#,
        #"{"customerId":"c","accountNumber":"4111","expiration":"1","cardholderName":"","paymentNetwork":"x","status":"lost","localizedDescription":"Gold","country":"KR","customer":{"phoneNumber":"010-1234-5678","email":"a@b.c","phoneChangedAt":"2024-01-01T00:00:00Z","emailChangedAt":"2024-01-02T00:00:00Z","addressChangedAt":"2024-01-03T00:00:00Z","customerId":"c"}}"#,
        // Whitespace between tokens, nulls for optional members, an empty customer object.
        " \t{ \"customerId\" : \"c\" ,\"accountNumber\":\"4\", \"expiration\":\"x\",\"cardholderName\":\"n\",\"paymentNetwork\":\"p\",\"cardId\":null,\"country\":null,\"customer\":{} }\r\n ",
        #"{"customerId":"c","accountNumber":"4","expiration":"x","cardholderName":"김민지 KIM","paymentNetwork":"p","customer":null}"#,
        #"{"customerId":"c","accountNumber":"4","expiration":"x","cardholderName":"n","paymentNetwork":"p","customer":{"email":null}}"#,
        // DEL and other printable bytes are plain string content.
        "{\"customerId\":\"c\u{7F}/'<>\",\"accountNumber\":\"4\",\"expiration\":\"x\",\"cardholderName\":\"n\",\"paymentNetwork\":\"p\"}",
    ]

    @Test("Plain lines are decoded, to JSONDecoder's record", arguments: plain)
    func plainLines(line: String) throws {
        let fast = try #require(CardImport.LineDecoder.decode(Array(line.utf8)))
        #expect(fast == reference(line))
    }

    @Test(
        "Lines outside the plain shape are left to JSONDecoder",
        arguments: [
            // an escape
            #"{"customerId":"c\u0041","accountNumber":"4","expiration":"x","cardholderName":"n","paymentNetwork":"p"}"#,
            // a number
            #"{"customerId":"c","accountNumber":4111,"expiration":"x","cardholderName":"n","paymentNetwork":"p"}"#,
            // unknown key
            #"{"customerId":"c","accountNumber":"4","expiration":"x","cardholderName":"n","paymentNetwork":"p","extra":"1"}"#,
            // repeated
            #"{"customerId":"c","customerId":"d","accountNumber":"4","expiration":"x","cardholderName":"n","paymentNetwork":"p"}"#,
            #"{"accountNumber":"4","expiration":"x","cardholderName":"n","paymentNetwork":"p"}"#,  // customerId missing
            // required null
            #"{"customerId":null,"accountNumber":"4","expiration":"x","cardholderName":"n","paymentNetwork":"p"}"#,
            // trailing text
            #"{"customerId":"c","accountNumber":"4","expiration":"x","cardholderName":"n","paymentNetwork":"p"} x"#,
            #"{"customerId":"c","accountNumber":"4","expiration":"x","cardholderName":"n","paymentNetwork":"p","customer":"c"}"#,
            #"{"customerId":"c","accountNumber":"4","expiration":"x","cardholderName":"n","paymentNetwork":"p","customer":{"email":{}}}"#,
            #"{"customerId":"c","accountNumber":"4","expiration":"x","cardholderName":"n","paymentNetwork":"p","customer":{"x":"1"}}"#,
            // trailing comma
            #"{"customerId":"c","accountNumber":"4","expiration":"x","cardholderName":"n","paymentNetwork":"p",}"#,
            // raw tab
            "{\"customerId\":\"a\tb\",\"accountNumber\":\"4\",\"expiration\":\"x\",\"cardholderName\":\"n\",\"paymentNetwork\":\"p\"}",
            #"[{"customerId":"c"}]"#, "", "nul", #"{"customerId":"c""#,
        ])
    func otherLines(line: String) {
        #expect(CardImport.LineDecoder.decode(Array(line.utf8)) == nil)
    }

    @Test("Bytes that are not UTF-8 are left to JSONDecoder")
    func invalidUTF8() {
        var bytes = Array(Self.plain[0].utf8)
        bytes[bytes.firstIndex(of: UInt8(ascii: "K"))!] = 0xC3  // a lead byte without its continuation
        #expect(CardImport.LineDecoder.decode(bytes) == nil)
    }

    @Test("Randomly damaged lines: whenever the plain-line decoder answers, JSONDecoder answers the same")
    func damagedLines() {
        var generator = SeededGenerator(seed: 14)
        let alphabet = Array(#"{}[]:,"\ nul0123abc"#.utf8) + [0x09, 0x0A, 0xC3, 0xA9, 0x7F, 0x00]
        var decoded = 0
        for _ in 0..<3_000 {
            var bytes = Array(Self.plain[Int(generator.next() % UInt64(Self.plain.count))].utf8)
            for _ in 0..<(1 + Int(generator.next() % 3)) {
                let at = Int(generator.next() % UInt64(bytes.count))
                switch generator.next() % 3 {
                case 0: bytes.remove(at: at)
                case 1: bytes.insert(alphabet[Int(generator.next() % UInt64(alphabet.count))], at: at)
                default: bytes[at] = alphabet[Int(generator.next() % UInt64(alphabet.count))]
                }
            }
            guard let fast = CardImport.LineDecoder.decode(bytes) else { continue }
            decoded += 1
            let expected = try? JSONCoding.decoder.decode(CardImport.Record.self, from: Data(bytes))
            #expect(fast == expected, "\(String(decoding: bytes, as: UTF8.self))")
        }
        // Damage inside a string's text keeps a line plain (169 of the 3,000 with this seed): the comparison is not vacuous.
        #expect(decoded > 100)
    }
}
