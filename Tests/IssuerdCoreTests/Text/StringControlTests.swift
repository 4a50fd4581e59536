import IssuerdCore
import Testing

@Suite struct StringControlTests {
    /// The range check is Unicode's general category Cc, for every scalar there is.
    @Test func agreesWithTheGeneralCategoryForEveryScalar() {
        var controls = 0
        for value in UInt32(0)...0x10FFFF {
            guard let scalar = Unicode.Scalar(value) else { continue }  // surrogates
            let isControl = scalar.properties.generalCategory == .control
            #expect(String(Character(scalar)).containsControlCharacter == isControl, "U+\(String(value, radix: 16))")
            if isControl { controls += 1 }
        }
        #expect(controls == 65)
    }

    @Test func findsOneAnywhere() {
        #expect("홍길동\u{85}".containsControlCharacter)
        #expect(!"홍길동 é".containsControlCharacter)
        #expect(!"".containsControlCharacter)
    }
}
