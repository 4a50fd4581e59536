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
