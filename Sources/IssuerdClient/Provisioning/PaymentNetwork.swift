/// A card network as issuerd names it in ``CardSummary/paymentNetwork``, normalised so that the
/// PassKit glue can map it to `PKPaymentNetwork` (and Linux tests can check the mapping input).
public enum PaymentNetwork: String, Sendable, CaseIterable {
    /// Visa.
    case visa
    /// Mastercard.
    case mastercard
    /// American Express.
    case amex
    /// Discover.
    case discover
    /// JCB.
    case jcb
    /// China UnionPay.
    case unionPay
    /// Maestro.
    case maestro
    /// Interac.
    case interac
    /// eftpos (Australia).
    case eftpos

    /// Normalises a wire name: case, spaces, `_` and `-` do not matter, and common aliases
    /// (`master_card`, `american_express`, `china_union_pay`) are accepted.
    ///
    /// - Parameter wireName: The server's network name.
    /// - Returns: `nil` for a network this client does not know (the app then omits it and
    ///   PassKit lets the user's device decide).
    public init?(wireName: String) {
        guard wireName.utf8.count <= 64 else { return nil }
        let key = String(wireName.lowercased().filter { $0.isLetter || $0.isNumber })
        switch key {
        case "visa": self = .visa
        case "mastercard": self = .mastercard
        case "amex", "americanexpress": self = .amex
        case "discover": self = .discover
        case "jcb": self = .jcb
        case "unionpay", "chinaunionpay", "cup": self = .unionPay
        case "maestro": self = .maestro
        case "interac": self = .interac
        case "eftpos": self = .eftpos
        default: return nil
        }
    }
}

extension CardSummary {
    /// The card's network, if this client knows it.
    public var network: PaymentNetwork? { PaymentNetwork(wireName: paymentNetwork) }
}
