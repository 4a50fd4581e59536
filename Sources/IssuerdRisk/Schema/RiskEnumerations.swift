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
    case inApp, walletExtension, tsp, mdes, googlePay
    /// The names rules use.
    public static let names = ["in_app", "wallet_extension", "tsp", "mdes", "google_pay"]
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
