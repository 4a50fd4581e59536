import Foundation
import IssuerdOutbox
import Testing

/// The wallet a step-up message names: Apple Pay for the Apple paths, none for a Mastercard token.
@Suite("Step-up message texts")
struct StepUpMessageTests {
    @Test(
        "Every method and language names Apple Pay by default and no wallet for .any, with the code and its lifetime",
        arguments: [StepUpMethod.sms, .ars, .email])
    func wallets(method: StepUpMethod) {
        for locale in [MessageLocale.korean, .english] {
            let apple = StepUpMessage.text(code: "123456", method: method, locale: locale, minutes: 10)
            let any = StepUpMessage.text(code: "123456", method: method, locale: locale, minutes: 10, wallet: .any)
            #expect(apple.contains("Apple Pay"))
            #expect(!any.contains("Apple Pay"))
            #expect(any.contains(locale == .korean ? "모바일 지갑" : "mobile wallet"))
            let digits = method == .ars ? "1, 2, 3, 4, 5, 6" : "123456"
            #expect(apple.contains(digits) && any.contains(digits))
        }
    }

    @Test("A payload stored before the wallet field existed decodes as Apple Pay's")
    func legacyPayload() throws {
        let stored = #"""
            {"challengeId":"c","tokenReference":"t","method":"sms","destinationMasked":"010-****-5678",
             "expiresAt":"2026-12-04T00:00:00Z","locale":"ko","validMinutes":10,"keyVersion":1,"sealed":"AA=="}
            """#
        let payload = try JSONDecoder().decode(StepUpDeliveryPayload.self, from: Data(stored.utf8))
        #expect(payload.wallet == nil)
        let written = try JSONDecoder().decode(
            StepUpDeliveryPayload.self,
            from: JSONEncoder().encode(
                StepUpDeliveryPayload(
                    challengeId: "c", tokenReference: "t", method: "sms", destinationMasked: "m",
                    expiresAt: "2026-12-04T00:00:00Z", locale: "en", validMinutes: 10, keyVersion: 1, sealed: "AA==",
                    wallet: .any)))
        #expect(written.wallet == .any)
    }
}
