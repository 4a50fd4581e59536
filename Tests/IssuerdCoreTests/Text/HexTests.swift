import Foundation
import IssuerdCore
import Testing

@Suite("Lowercase hex")
struct HexTests {
    @Test("Two lowercase digits a byte, leading zeros kept")
    func encodes() {
        #expect(Hex.lowercase([0x00, 0x0F, 0xA5, 0xFF, 0x10, 0x9B]) == "000fa5ff109b")
        #expect(Hex.lowercase([UInt8]()) == "")
        #expect(Hex.lowercase((0...255).map(UInt8.init)).count == 512)
    }

    @Test("Decoding takes either case, even mixed, and refuses odd lengths and other characters")
    func decodes() {
        #expect(Hex.bytes(Array("000fa5ff109b".utf8)) == [0x00, 0x0F, 0xA5, 0xFF, 0x10, 0x9B])
        #expect(Hex.bytes(Array("000FA5FF109B".utf8)) == [0x00, 0x0F, 0xA5, 0xFF, 0x10, 0x9B])
        #expect(Hex.bytes(Array("0aF5".utf8)) == [0x0A, 0xF5])
        #expect(Hex.bytes([UInt8]()) == [])
        for bad in ["0", "abc", "0g", "g0", " 0", "0x12", "ab\u{0}0", "éé"] {
            #expect(Hex.bytes(Array(bad.utf8)) == nil, "\(bad)")
        }
        // Every byte round-trips through the encoder, in both cases.
        let all = (0...255).map(UInt8.init)
        #expect(Hex.bytes(Array(Hex.lowercase(all).utf8)) == all)
        #expect(Hex.bytes(Array(Hex.lowercase(all).uppercased().utf8)) == all)
        for byte in 0...255 {
            let expected: UInt8? =
                Array("0123456789abcdefABCDEF".utf8).contains(UInt8(byte))
                ? UInt8(Int(String(UnicodeScalar(UInt8(byte))), radix: 16)!) : nil
            #expect(Hex.value(of: UInt8(byte)) == expected)
        }
    }

    @Test("A UUID in the lowercase form Foundation's uuidString gives, lowercased")
    func uuid() {
        #expect(
            UUID(uuidString: "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11")!.lowercasedString
                == "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")
        #expect(
            UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)).lowercasedString
                == "00000000-0000-0000-0000-000000000000")
        for _ in 0..<1_000 {
            let id = UUID()
            #expect(id.lowercasedString == id.uuidString.lowercased())
        }
    }
}
