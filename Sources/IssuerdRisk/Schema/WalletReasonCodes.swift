/// The wallet recommendation reason codes, by the names rules use, with Apple's codes.
///
/// `has()` and `has_any()` check their literals against this table at compile time, so a
/// misspelt code is an error instead of a rule that never fires. The API layer maps the
/// two-character codes it receives to these names.
public enum WalletReasonCodes {
    /// Name, Apple code, meaning (thresholds as Apple documents them to issuers).
    public static let table: [(name: String, code: String, meaning: String)] = [
        ("ACCOUNT_TOO_NEW", "01/02", "wallet account created ≤ 40 days ago"),
        ("ACCOUNT_CARD_TOO_NEW", "03", "account/card pair first seen < 20 days ago"),
        ("ACCOUNT_RECENTLY_CHANGED", "04", "wallet account settings changed in the last 20 days"),
        ("SUSPICIOUS_TRANSACTIONS", "05", "suspicious transactions on the wallet account"),
        ("INACTIVE_ACCOUNT", "06", "no wallet account activity for a year"),
        ("HAS_SUSPENDED_TOKENS", "07", "device holds suspended tokens"),
        ("DEVICE_RECENTLY_LOST", "08", "device in Lost Mode in the last 7 days"),
        ("TOO_MANY_RECENT_ATTEMPTS", "09", "more than 3 attempts for this card on this device recently"),
        ("TOO_MANY_RECENT_TOKENS", "0A", "more than 5 cards added to the device in 24 h"),
        ("TOO_MANY_DIFFERENT_CARDHOLDERS", "0B", "more than 2 cardholder names on the device"),
        ("LOW_DEVICE_SCORE", "0C", "device score below 3"),
        ("LOW_ACCOUNT_SCORE", "0D", "account score below 4"),
        ("OUTSIDE_HOME_TERRITORY", "0E", "provisioning outside the wallet's home country"),
        ("UNABLE_TO_ASSESS", "0F", "the wallet's model could not score the request"),
        ("HIGH_RISK", "0G", "the wallet considers the request high risk (recommends decline)"),
        ("LOW_PHONE_NUMBER_SCORE", "0H", "phone-number score below 3"),
    ]

    /// The names, for checking and suggestions.
    public static let names: [String] = table.map(\.name)
}
