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
}
