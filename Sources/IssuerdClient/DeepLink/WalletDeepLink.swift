import Foundation

/// The pass Wallet opened the issuer app for, from the In-App Verification launch URL.
///
/// The issuer registers an app launch URL with the card network; Wallet opens it with the pass's
/// `passTypeIdentifier` and `serialNumber` as query items (Apple's "PassKit In-App Provisioning",
/// In-App Verification). Parsing is tolerant of extra parameters, their order and percent-encoding,
/// and strict about everything that would make the pass ambiguous: missing, empty or value-less
/// items, two different values for one name, malformed percent-encoding, anything but visible
/// ASCII, and oversized input.
public struct WalletDeepLink: Sendable, Hashable, CustomStringConvertible {
    /// The pass type, e.g. `paymentpass.com.apple`.
    public let passTypeIdentifier: String
    /// The pass's serial number within its type.
    public let serialNumber: String

    /// Longest accepted value of either item, in UTF-8 bytes.
    public static let maximumValueLength = 256
    /// Longest accepted launch URL, in UTF-8 bytes.
    public static let maximumURLLength = 4096

    /// Parses the launch URL.
    ///
    /// - Parameter url: The URL from `application(_:open:options:)`, `onOpenURL` or a universal
    ///   link's `webpageURL`.
    /// - Throws: ``WalletDeepLinkError`` naming the offending parameter.
    public init(url: URL) throws(WalletDeepLinkError) {
        guard url.absoluteString.utf8.count <= Self.maximumURLLength else { throw WalletDeepLinkError(.urlTooLong) }
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
            throw WalletDeepLinkError(.malformedURL)
        }
        let items = components.percentEncodedQueryItems ?? []
        self.passTypeIdentifier = try Self.value(of: "passTypeIdentifier", in: items)
        self.serialNumber = try Self.value(of: "serialNumber", in: items)
    }

    /// Creates a link from values the app already holds (e.g. a `PKSecureElementPass`).
    ///
    /// - Throws: ``WalletDeepLinkError`` when a value would not be accepted from a URL.
    public init(passTypeIdentifier: String, serialNumber: String) throws(WalletDeepLinkError) {
        try Self.validate(passTypeIdentifier, name: "passTypeIdentifier")
        try Self.validate(serialNumber, name: "serialNumber")
        self.passTypeIdentifier = passTypeIdentifier
        self.serialNumber = serialNumber
    }

    public var description: String {
        "WalletDeepLink(passTypeIdentifier: \(passTypeIdentifier), serialNumber: \(serialNumber))"
    }

    /// The one value of `name`; repeats with the same decoded value are tolerated.
    private static func value(of name: String, in items: [URLQueryItem]) throws(WalletDeepLinkError) -> String {
        var found: String?
        for item in items where item.name == name {
            guard let encoded = item.value else { throw WalletDeepLinkError(.malformedParameter, parameter: name) }
            guard let decoded = encoded.removingPercentEncoding else {
                throw WalletDeepLinkError(.malformedParameter, parameter: name)
            }
            if let found, found != decoded { throw WalletDeepLinkError(.conflictingParameter, parameter: name) }
            found = decoded
        }
        guard let found else { throw WalletDeepLinkError(.missingParameter, parameter: name) }
        try validate(found, name: name)
        return found
    }

    private static func validate(_ value: String, name: String) throws(WalletDeepLinkError) {
        guard !value.isEmpty else { throw WalletDeepLinkError(.emptyParameter, parameter: name) }
        guard value.utf8.count <= maximumValueLength else {
            throw WalletDeepLinkError(.parameterTooLong, parameter: name)
        }
        // Pass type identifiers and serial numbers are visible ASCII. A `%` left after decoding
        // means double encoding, or malformed encoding that Foundation's URL parser escaped
        // (`%ZZ` becomes `%25ZZ`): either way not the value Wallet meant.
        guard value.unicodeScalars.allSatisfy({ (0x21...0x7E).contains($0.value) && $0 != "%" }) else {
            throw WalletDeepLinkError(.malformedParameter, parameter: name)
        }
    }
}
