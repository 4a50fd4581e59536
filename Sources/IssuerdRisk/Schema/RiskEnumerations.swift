/// A closed set of string values that an attribute may take, stored as a small integer.
///
/// Enumerated attributes compare as integers at run time, and a literal outside the domain
/// (`card.status == "lsot"`) is a compile error with a suggestion instead of a rule that
/// silently never fires.
public protocol RiskEnumeration: CaseIterable, Sendable, Hashable, RawRepresentable where RawValue == UInt8 {
    /// The names analysts write, in `rawValue` order.
    static var names: [String] { get }
}

extension RiskEnumeration {
    /// The name analysts write for this value.
    public var name: String { Self.names[Int(rawValue)] }

    /// The value named `name`, or nil when the domain has no such name.
    public init?(name: String) {
        guard let index = Self.names.firstIndex(of: name) else { return nil }
        self.init(rawValue: UInt8(index))
    }
}

/// How the add-card request reached the issuer.
public enum RequestChannel: UInt8, RiskEnumeration {
    /// The values, in `names` order.
    case inApp, walletExtension, tsp, mdes, googlePay, samsungPay
    /// The names rules use.
    public static let names = ["in_app", "wallet_extension", "tsp", "mdes", "google_pay", "samsung_pay"]
}

/// The wallet that asks for the token (`request.wallet`): named from the network's token
/// requestor id (``TokenRequestors``) or, for an issuer-app push, from the route it came by.
public enum WalletName: UInt8, RiskEnumeration {
    /// The values, in `names` order.
    case applePay, googlePay, samsungPay, other
    /// The names rules use.
    public static let names = ["apple_pay", "google_pay", "samsung_pay", "other"]
}

/// The wallets' token requestor ids per network, so that rules name the wallet and never repeat
/// the numbers (published by a card processor for its issuers; Visa's ids start 400, Mastercard's 501).
public enum TokenRequestors {
    /// The card networks the table covers.
    public enum Network: String, Sendable, CaseIterable {
        case visa, mastercard
    }

    /// Each wallet's id at each network.
    public static let table: [(wallet: WalletName, network: Network, id: String)] = [
        (.applePay, .visa, "40010030273"), (.googlePay, .visa, "40010075001"), (.samsungPay, .visa, "40010043095"),
        (.applePay, .mastercard, "50110030273"), (.googlePay, .mastercard, "50120834693"),
        (.samsungPay, .mastercard, "50139059239"),
    ]

    private static let wallets: [String: WalletName] = Dictionary(
        uniqueKeysWithValues: table.map { ($0.id, $0.wallet) })

    /// The wallet a token requestor id names; `other` for an id of no wallet in the table (a
    /// merchant, another wallet).
    public static func wallet(tokenRequestorID: String) -> WalletName { wallets[tokenRequestorID] ?? .other }

    /// The id `wallet` has at `network`, for what issuerd writes on the wallet's behalf.
    public static func id(of wallet: WalletName, at network: Network) -> String? {
        table.first { $0.wallet == wallet && $0.network == network }?.id
    }

    /// `request.wallet`: the requestor id's wallet when the request carries one (TSP, MDES),
    /// else the wallet of the push route (`in_app` and `wallet_extension` are Apple Pay's);
    /// unknown for a TSP or MDES request without a requestor id.
    public static func wallet(channel: RequestChannel?, tokenRequestorID: String?) -> WalletName? {
        if let tokenRequestorID { return wallet(tokenRequestorID: tokenRequestorID) }
        switch channel {
        case .inApp, .walletExtension: return .applePay
        case .googlePay: return .googlePay
        case .samsungPay: return .samsungPay
        case .tsp, .mdes, nil: return nil
        }
    }
}

/// Where the card number came from, as the wallet reports it.
public enum TokenizationSource: UInt8, RiskEnumeration {
    /// The values, in `names` order.
    case manual, camera, push, onFile, existingToken, browser, chip
    /// The names rules use (the last three only from MDES: `EXISTING_TOKEN_CREDENTIAL`,
    /// `ACCOUNT_ADDED_VIA_BROWSER`, `ACCOUNT_ADDED_VIA_CHIP_DATA`).
    public static let names = ["manual", "camera", "push", "on_file", "existing_token", "browser", "chip"]
}

/// The wallet's or TSP's recommended decision (MDES Authorize / VTS approve-provisioning).
public enum WalletRecommendation: UInt8, RiskEnumeration {
    /// The values, in `names` order.
    case approve, requireAdditionalAuthentication, decline
    /// The names rules use.
    public static let names = ["approve", "require_additional_authentication", "decline"]
}

/// The card verification value check reported by the TSP for a manual or camera add.
public enum CVVResult: UInt8, RiskEnumeration {
    /// The values, in `names` order.
    case match, mismatch, notProvided
    /// The names rules use.
    public static let names = ["match", "mismatch", "not_provided"]
}

/// The kind of device the token is bound to.
public enum DeviceType: UInt8, RiskEnumeration {
    /// The values, in `names` order.
    case phone, watch, tablet, other
    /// The names rules use.
    public static let names = ["phone", "watch", "tablet", "other"]
}

/// The card's status in the issuer's own records.
public enum CardStatus: UInt8, RiskEnumeration {
    /// The values, in `names` order.
    case active, blocked, lost, stolen, closed
    /// The names rules use.
    public static let names = ["active", "blocked", "lost", "stolen", "closed"]
}

/// The card's payment network.
public enum CardNetwork: UInt8, RiskEnumeration {
    /// The values, in `names` order.
    case visa, mastercard, amex, discover, other
    /// The names rules use.
    public static let names = ["visa", "mastercard", "amex", "discover", "other"]
}
