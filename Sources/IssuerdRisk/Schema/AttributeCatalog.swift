import Foundation

/// Every attribute the rule language offers, by dotted name.
///
/// This table is the request schema the compiler checks rules against; docs/rules.md lists
/// the same names, types and sources.
public enum AttributeCatalog {
    /// Every attribute, in documentation order.
    public static let all: [Attribute] = [
        .enumeration(
            "request.channel", { input, _ in input.channel?.rawValue }, \RiskInput.channel, domain: "channel",
            "How the request arrived: the issuer app (in_app), the Wallet extension, the issuer's Android app pushing to Google Pay (google_pay) or Samsung Pay (samsung_pay), a TSP authorization (tsp) or MDES Authorize Service (mdes).",
            source: "issuerd (route that received the request)"),
        .derivedEnumeration(
            "request.wallet",
            { input, _ in
                TokenRequestors.wallet(channel: input.channel, tokenRequestorID: input.tokenRequestorID)?.rawValue
            }, WalletName.self, domain: "wallet",
            "The wallet asking: apple_pay, google_pay, samsung_pay or other, from the token requestor id when the request has one (TSP, MDES), else from the push route (in_app and wallet_extension are Apple Pay). Unknown for a TSP or MDES request without a requestor id.",
            source: "issuerd (token requestor id table, docs/rules.md)"),
        .enumeration(
            "request.source", { input, _ in input.source?.rawValue }, \RiskInput.source, domain: "tokenization source",
            "Where the card number came from.", source: "Apple / TSP tokenization source"),
        .string(
            "request.token_requestor_id", { input, _ in input.tokenRequestorID }, \.tokenRequestorID,
            "The network's token requestor id (Apple Pay, merchant on file, …).", source: "TSP"),
        .derived(
            "request.hour_utc", { input, _ in input.time.map { (Self.secondsOfDay($0) / 3_600).rounded(.down) } },
            "Hour of the request, 0–23, UTC.", source: "issuerd clock"),
        .derived(
            "request.weekday_utc", { input, _ in input.time.map { Self.weekday($0) } },
            "ISO weekday of the request, 1 = Monday … 7 = Sunday, UTC.", source: "issuerd clock"),
        .enumeration(
            "request.cvv_result", { input, _ in input.cvvResult?.rawValue }, \RiskInput.cvvResult, domain: "CVV result",
            "CVV2 check of a manual or camera add.", source: "TSP"),
        .string(
            "request.token_type", { input, _ in input.tokenType }, \.tokenType,
            "The kind of token requested, as MDES sends it: EMBEDDED_SE, CLOUD, STATIC.", source: "MDES"),
        .string(
            "request.wallet_id", { input, _ in input.walletID }, \.walletID,
            "The wallet provider's id at MDES (walletId, 1–3 characters).", source: "MDES"),

        .number(
            "wallet.device_score", { input, _ in input.walletDeviceScore }, \.walletDeviceScore,
            "Wallet device score, 1 (risky) to 5 (trusted).", source: "Apple wallet risk data"),
        .number(
            "wallet.account_score", { input, _ in input.walletAccountScore }, \.walletAccountScore,
            "Wallet account score, 1 (risky) to 5 (trusted).", source: "Apple wallet risk data"),
        .number(
            "wallet.phone_score", { input, _ in input.walletPhoneScore }, \.walletPhoneScore,
            "Wallet phone-number score, 1 (risky) to 5 (trusted).", source: "Apple wallet risk data"),
        .enumeration(
            "wallet.recommendation", { input, _ in input.walletRecommendation?.rawValue },
            \RiskInput.walletRecommendation,
            domain: "wallet recommendation", "The wallet's or TSP's recommended decision.", source: "Apple / TSP"),
        .strings(
            "wallet.reason_codes", { input, _ in input.walletReasonCodes }, \.walletReasonCodes,
            "Wallet recommendation reason codes, by name (table in docs/rules.md).", source: "Apple wallet risk data"),
        .number(
            "wallet.token_risk_score", { input, _ in input.networkTokenRiskScore }, \.networkTokenRiskScore,
            "Network token risk score, 1 (low) to 99 (high); unknown when the network sent none.",
            source: "Visa VTS / Mastercard TPI"),
        .string(
            "wallet.account_id_hash", { input, _ in input.walletAccountIDHash }, \.walletAccountIDHash,
            "SHA-256 of the wallet account id (usually the e-mail), hex as sent.", source: "MDES"),
        .number(
            "wallet.account_lifetime", { input, _ in input.walletAccountLifetime }, \.walletAccountLifetime,
            "The wallet's account lifetime figure (accountLifeTime, 0–99).", source: "MDES"),

        .string("device.id", { input, _ in input.deviceID }, \.deviceID, "Wallet device identifier.", source: "Apple"),
        .enumeration(
            "device.type", { input, _ in input.deviceType?.rawValue }, \RiskInput.deviceType, domain: "device type",
            "Device kind.", source: "Apple"),
        .string(
            "device.locale", { input, _ in input.deviceLocale }, \.deviceLocale,
            "Device language and region, e.g. en_US.", source: "Apple"),
        .string(
            "device.locale_country", { input, _ in input.deviceLocaleCountry }, \.deviceLocaleCountry,
            "Region part of the device locale, ISO 3166-1 alpha-2.", source: "Apple"),
        .string(
            "device.ip_country", { input, _ in input.deviceIPCountry }, \.deviceIPCountry,
            "Country of the device's IP address, ISO 3166-1 alpha-2.", source: "Apple / TSP"),
        .number(
            "device.active_tokens", { input, _ in input.deviceActiveTokens }, \.deviceActiveTokens,
            "Active payment tokens already on the device (all issuers).", source: "Apple"),
        .string(
            "device.form_factor", { input, _ in input.deviceFormFactor }, \.deviceFormFactor,
            "The device's form factor as MDES sends it: PHONE, TABLET, WATCH, CARD, …", source: "MDES"),
        .string(
            "device.os_name", { input, _ in input.deviceOSName }, \.deviceOSName,
            "The device's operating system as MDES sends it: ANDROID, IOS, TIZEN, …", source: "MDES"),
        .string(
            "device.storage_technology", { input, _ in input.deviceStorageTechnology }, \.deviceStorageTechnology,
            "Where the token is stored, as MDES sends it: TEE, SE, SERVER, DEVICE_MEMORY, …", source: "MDES"),

        .enumeration(
            "card.status", { input, _ in input.cardStatus?.rawValue }, \RiskInput.cardStatus, domain: "card status",
            "The card's status in the issuer's records.", source: "issuerd cards table"),
        .enumeration(
            "card.network", { input, _ in input.cardNetwork?.rawValue }, \RiskInput.cardNetwork, domain: "card network",
            "The card's payment network.", source: "issuerd cards table"),
        .duration(
            "card.age", { input, _ in input.cardAge }, \.cardAge, "Time since the card was issued.",
            source: "issuerd cards table"),
        .string(
            "card.country", { input, _ in input.cardCountry }, \.cardCountry,
            "Issuing country of the card, ISO 3166-1 alpha-2.", source: "issuerd cards table"),
        .number(
            "card.active_tokens", { input, _ in input.cardActiveTokens }, \.cardActiveTokens,
            "Active tokens of this card in any wallet.", source: "issuerd tokens table"),

        .duration(
            "customer.age", { input, _ in input.customerAge }, \.customerAge,
            "Time since the customer relationship began.", source: "issuerd customers table"),
        .duration(
            "customer.since_phone_change", { input, _ in input.sincePhoneChange }, \.sincePhoneChange,
            "Time since the phone number on file changed (customer age if never).", source: "issuerd customers table"),
        .duration(
            "customer.since_email_change", { input, _ in input.sinceEmailChange }, \.sinceEmailChange,
            "Time since the e-mail address on file changed (customer age if never).", source: "issuerd customers table"),
        .duration(
            "customer.since_address_change", { input, _ in input.sinceAddressChange }, \.sinceAddressChange,
            "Time since the postal address on file changed (customer age if never).", source: "issuerd customers table"),
        .number(
            "customer.name_match_score", { input, _ in input.nameMatchScore }, \.nameMatchScore,
            "Similarity of the wallet's cardholder name to the name on file, 0–100.",
            source: "issuerd (computed from the request)"),
        .bool(
            "customer.phone_last4_match", { input, _ in input.phoneLast4Match }, \.phoneLast4Match,
            "The wallet's phone last four digits equal the phone on file.",
            source: "issuerd (computed from the request)"),
    ]

    /// Attributes by name, for the compiler (never used while evaluating).
    public static let byName: [String: Attribute] = Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0) })

    static func secondsOfDay(_ date: Date) -> Double {
        let seconds = Int64(date.timeIntervalSince1970.rounded(.down))
        return Double(((seconds % 86_400) + 86_400) % 86_400)
    }

    static func weekday(_ date: Date) -> Double {
        // 1970-01-01 was a Thursday (ISO weekday 4).
        let days = Int64((date.timeIntervalSince1970 / 86_400).rounded(.down))
        return Double(((days + 3) % 7 + 7) % 7 + 1)
    }
}
