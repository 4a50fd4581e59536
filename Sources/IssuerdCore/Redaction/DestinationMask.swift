/// Masks step-up destinations for everything but the delivery provider call: the TSP, the
/// cardholder's screen, logs and the database see only enough to recognise their own number.
package enum DestinationMask {
    /// `01012345678` → `010-****-5678`; `+82 10 1234 5678` → `+82-****-5678`.
    ///
    /// Keeps the first three digits (or the country code) and the last four, as issuers show
    /// them in Wallet's "choose a verification method" sheet.
    package static func phone(_ number: String) -> String {
        let digits = number.filter(\.isASCII).filter(\.isNumber)
        guard digits.count >= 7 else { return "****" }
        let lastFour = digits.suffix(4)
        if number.hasPrefix("+") {
            let countryCode = digits.prefix(digits.count > 11 ? 2 : 1)
            return "+\(countryCode)-****-\(lastFour)"
        }
        return "\(digits.prefix(3))-****-\(lastFour)"
    }

    /// `hong.gildong@example.com` → `h*********g@example.com`.
    package static func email(_ address: String) -> String {
        guard let at = address.lastIndex(of: "@"), at != address.startIndex else { return "****" }
        let local = address[..<at]
        let domain = address[address.index(after: at)...]
        guard !domain.isEmpty else { return "****" }
        let masked: String
        switch local.count {
        case 1: masked = "*"
        case 2: masked = "\(local.first!)*"
        default: masked = "\(local.first!)" + String(repeating: "*", count: min(local.count - 2, 8)) + "\(local.last!)"
        }
        return masked + "@" + domain
    }
}
