/// A string enumeration of Mastercard's wire that stays open: MDES adds values without notice
/// (docs/networks.md, transport rules), so a value this version does not know decodes to
/// `unknown(text)` and is written back as it came, never a decoding failure.
public protocol MDESEnumeration: Codable, Sendable, Hashable, CustomStringConvertible {
    /// Every known value with its wire text.
    static var known: [(value: Self, text: String)] { get }
    /// The value for a text this version does not know.
    static func unknown(_ text: String) -> Self
    /// The text of an unknown value; nil for a known one.
    var unknownText: String? { get }
}

extension MDESEnumeration {
    /// The value of `text`: a known one, else ``unknown(_:)``.
    public init(text: String) {
        self = Self.known.first { $0.text == text }?.value ?? Self.unknown(text)
    }

    /// The wire text.
    public var text: String {
        if let unknownText { return unknownText }
        return Self.known.first { $0.value == self }?.text ?? ""
    }

    /// Whether the value is one this version knows.
    public var isKnown: Bool { unknownText == nil }

    public var description: String { text }

    public init(from decoder: any Decoder) throws {
        self.init(text: try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(text)
    }
}

/// `decision`: green, red, yellow.
public enum MDESDecision: MDESEnumeration {
    case approved, declined, requireAdditionalAuthentication
    case unknown(String)
    public static let known: [(value: Self, text: String)] = [
        (.approved, "APPROVED"), (.declined, "DECLINED"),
        (.requireAdditionalAuthentication, "REQUIRE_ADDITIONAL_AUTHENTICATION"),
    ]
    public var unknownText: String? { if case .unknown(let text) = self { text } else { nil } }
}

/// `services` entries (currently only `DIGITIZATION`).
public enum MDESService: MDESEnumeration {
    case digitization
    case unknown(String)
    public static let known: [(value: Self, text: String)] = [(.digitization, "DIGITIZATION")]
    public var unknownText: String? { if case .unknown(let text) = self { text } else { nil } }
}

/// `tokenType`: `EMBEDDED_SE`, `CLOUD`, `STATIC`.
public enum MDESTokenType: MDESEnumeration {
    case embeddedSE, cloud, staticToken
    case unknown(String)
    public static let known: [(value: Self, text: String)] = [
        (.embeddedSE, "EMBEDDED_SE"), (.cloud, "CLOUD"), (.staticToken, "STATIC"),
    ]
    public var unknownText: String? { if case .unknown(let text) = self { text } else { nil } }
}

/// `source` of the decrypted funding account data.
public enum MDESFundingSource: MDESEnumeration {
    case accountOnFile, accountAddedManually, accountAddedViaApplication, existingTokenCredential
    case accountAddedViaBrowser, accountAddedViaChipData
    case unknown(String)
    public static let known: [(value: Self, text: String)] = [
        (.accountOnFile, "ACCOUNT_ON_FILE"), (.accountAddedManually, "ACCOUNT_ADDED_MANUALLY"),
        (.accountAddedViaApplication, "ACCOUNT_ADDED_VIA_APPLICATION"),
        (.existingTokenCredential, "EXISTING_TOKEN_CREDENTIAL"), (.accountAddedViaBrowser, "ACCOUNT_ADDED_VIA_BROWSER"),
        (.accountAddedViaChipData, "ACCOUNT_ADDED_VIA_CHIP_DATA"),
    ]
    public var unknownText: String? { if case .unknown(let text) = self { text } else { nil } }
}

/// `activationMethod.type`.
public enum MDESActivationMethodType: MDESEnumeration {
    case textToCardholderNumber, emailToCardholderAddress, cardholderToCallAutomatedNumber
    case cardholderToCallMannedNumber, cardholderToVisitWebsite, cardholderToUseMobileApp
    case issuerToCallCardholderNumber
    case unknown(String)
    public static let known: [(value: Self, text: String)] = [
        (.textToCardholderNumber, "TEXT_TO_CARDHOLDER_NUMBER"),
        (.emailToCardholderAddress, "EMAIL_TO_CARDHOLDER_ADDRESS"),
        (.cardholderToCallAutomatedNumber, "CARDHOLDER_TO_CALL_AUTOMATED_NUMBER"),
        (.cardholderToCallMannedNumber, "CARDHOLDER_TO_CALL_MANNED_NUMBER"),
        (.cardholderToVisitWebsite, "CARDHOLDER_TO_VISIT_WEBSITE"),
        (.cardholderToUseMobileApp, "CARDHOLDER_TO_USE_MOBILE_APP"),
        (.issuerToCallCardholderNumber, "ISSUER_TO_CALL_CARDHOLDER_NUMBER"),
    ]
    public var unknownText: String? { if case .unknown(let text) = self { text } else { nil } }
}

/// `cvcResponse` of the Authorize Service answer.
public enum MDESCVCResponse: MDESEnumeration {
    case match, invalid, notProcessed
    case unknown(String)
    public static let known: [(value: Self, text: String)] = [
        (.match, "MATCH"), (.invalid, "INVALID"), (.notProcessed, "NOT_PROCESSED"),
    ]
    public var unknownText: String? { if case .unknown(let text) = self { text } else { nil } }
}

/// `result` of Validate Activation Code.
public enum MDESValidationResult: MDESEnumeration {
    case success, incorrectCode, incorrectCodeRetriesExceeded, expiredCode
    case unknown(String)
    public static let known: [(value: Self, text: String)] = [
        (.success, "SUCCESS"), (.incorrectCode, "INCORRECT_CODE"),
        (.incorrectCodeRetriesExceeded, "INCORRECT_CODE_RETRIES_EXCEEDED"), (.expiredCode, "EXPIRED_CODE"),
    ]
    public var unknownText: String? { if case .unknown(let text) = self { text } else { nil } }
}

/// `reasonCode` of Notify Token Updated.
public enum MDESTokenUpdateReason: MDESEnumeration {
    case statusUpdate, redigitizationComplete, deletedFromConsumerApp, authenticationPerformed
    case paymentChannelPreferenceUpdated, fundingAccountUpdate
    case unknown(String)
    public static let known: [(value: Self, text: String)] = [
        (.statusUpdate, "STATUS_UPDATE"), (.redigitizationComplete, "REDIGITIZATION_COMPLETE"),
        (.deletedFromConsumerApp, "DELETED_FROM_CONSUMER_APP"), (.authenticationPerformed, "AUTHENTICATION_PERFORMED"),
        (.paymentChannelPreferenceUpdated, "PAYMT_CHANNEL_PREFERENCE_UPDATED"),
        (.fundingAccountUpdate, "FUNDING_ACCOUNT_UPDATE"),
    ]
    public var unknownText: String? { if case .unknown(let text) = self { text } else { nil } }
}

/// A token's `status` in Notify Token Updated and Notify Suspicious Events.
public enum MDESTokenStatus: MDESEnumeration {
    case inactive, active, suspended, deactivated
    case unknown(String)
    public static let known: [(value: Self, text: String)] = [
        (.inactive, "INACTIVE"), (.active, "ACTIVE"), (.suspended, "SUSPENDED"), (.deactivated, "DEACTIVATED"),
    ]
    public var unknownText: String? { if case .unknown(let text) = self { text } else { nil } }
}

/// `suspendedBy` entries of Notify Token Updated.
public enum MDESSuspendedBy: MDESEnumeration {
    case issuer, paymentAppProvider, tokenRequestor, mobilePinLocked, cardholder
    case unknown(String)
    public static let known: [(value: Self, text: String)] = [
        (.issuer, "ISSUER"), (.paymentAppProvider, "PAYMENT_APP_PROVIDER"), (.tokenRequestor, "TOKEN_REQUESTOR"),
        (.mobilePinLocked, "MOBILE_PIN_LOCKED"), (.cardholder, "CARDHOLDER"),
    ]
    public var unknownText: String? { if case .unknown(let text) = self { text } else { nil } }
}
