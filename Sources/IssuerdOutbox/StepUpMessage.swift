/// The text delivered with a one-time code, in Korean or English.
///
/// Every message says never to share the code: social engineering of codes ("the bank's
/// security team needs the number you just received") is how yellow-path fraud works.
package enum StepUpMessage {
    /// The message for `code` sent by `method`.
    ///
    /// - Parameters:
    ///   - minutes: The code's lifetime, stated so the cardholder knows it expires.
    ///   - wallet: The wallet the card is being added to, as the message names it.
    package static func text(
        code: String, method: StepUpMethod, locale: MessageLocale, minutes: Int, wallet: Wallet = .applePay
    ) -> String {
        let name = wallet.name(in: locale)
        switch (locale, method) {
        case (.korean, .ars):
            // Voice: digits read one by one, twice, so the listener can write them down.
            let spoken = code.map(String.init).joined(separator: ", ")
            return "\(name) 카드 등록 인증번호는 \(spoken) 입니다. 다시 한 번, \(spoken). "
                + "이 번호를 누구에게도 알려주지 마세요. 카드사 직원도 인증번호를 묻지 않습니다."
        case (.korean, .email):
            return "\(name) 카드 등록 인증번호: \(code)\n\(minutes)분 동안 유효합니다.\n"
                + "이 번호를 누구에게도 알려주지 마세요. 카드사는 전화나 메시지로 인증번호를 묻지 않습니다. "
                + "본인이 요청하지 않았다면 즉시 고객센터로 연락해 주세요."
        case (.korean, _):
            return "[\(name) 카드 등록] 인증번호 \(code) (\(minutes)분 유효). 타인에게 절대 알려주지 마세요. 카드사는 인증번호를 묻지 않습니다."
        case (.english, .ars):
            let spoken = code.map(String.init).joined(separator: ", ")
            return "Your \(name) card verification code is \(spoken). Again: \(spoken). "
                + "Never share this code with anyone. We will never ask you for it."
        case (.english, .email):
            return "Your \(name) card verification code: \(code)\nIt expires in \(minutes) minutes.\n"
                + "Never share this code with anyone. We will never ask for it by phone or message. "
                + "If you did not ask for it, call us at once."
        case (.english, _):
            return
                "\(name) card verification code: \(code) (valid \(minutes) min). Never share it with anyone; we will never ask for it."
        }
    }
}

extension StepUpMessage {
    /// The subject of the code's e-mail. It never holds the code: subjects show on locked
    /// screens and in notification previews.
    package static func subject(locale: MessageLocale, wallet: Wallet = .applePay) -> String {
        let name = wallet.name(in: locale)
        switch locale {
        case .korean: return "[\(name)] 카드 등록 인증번호 안내"
        case .english: return "Your \(name) card verification code"
        }
    }
}

extension StepUpMessage {
    /// The wallet a message names. A Mastercard token (MDES) may be for Apple Pay, Google Pay or
    /// another wallet: its message names none.
    package enum Wallet: String, Sendable, Codable {
        case applePay = "apple_pay"
        case any

        func name(in locale: MessageLocale) -> String {
            switch (self, locale) {
            case (.applePay, _): "Apple Pay"
            case (.any, .korean): "모바일 지갑"
            case (.any, .english): "mobile wallet"
            }
        }
    }
}

/// The languages step-up messages are written in.
public enum MessageLocale: String, Sendable {
    case korean = "ko"
    case english = "en"

    /// The language of a device locale such as `ko_KR` or `en-US`; nil when unknown or absent.
    package init?(deviceLocale: String?) {
        guard let deviceLocale, deviceLocale.utf8.count <= 64 else { return nil }
        let language = deviceLocale.lowercased().prefix { $0.isLetter }
        switch language {
        case "ko": self = .korean
        case "en": self = .english
        default: return nil
        }
    }
}
