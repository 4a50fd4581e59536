/// Why a launch URL is not a usable Wallet In-App Verification link.
///
/// The description names the parameter, never its value.
public struct WalletDeepLinkError: Error, Equatable, CustomStringConvertible {
    /// A stable, extensible error code.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's stable name.
        public let name: String

        private init(_ name: String) { self.name = name }

        /// The URL cannot be split into components.
        public static let malformedURL = Code("malformed_url")
        /// The URL is longer than ``WalletDeepLink/maximumURLLength``.
        public static let urlTooLong = Code("url_too_long")
        /// A required query item is absent.
        public static let missingParameter = Code("missing_parameter")
        /// A required query item is present with an empty value.
        public static let emptyParameter = Code("empty_parameter")
        /// A required query item has no `=`, bad percent-encoding, or forbidden characters.
        public static let malformedParameter = Code("malformed_parameter")
        /// A required query item appears twice with different values.
        public static let conflictingParameter = Code("conflicting_parameter")
        /// A value is longer than ``WalletDeepLink/maximumValueLength``.
        public static let parameterTooLong = Code("parameter_too_long")

        public var description: String { name }
    }

    /// What is wrong.
    public let code: Code
    /// The query item concerned, if any.
    public let parameter: String?

    init(_ code: Code, parameter: String? = nil) {
        self.code = code
        self.parameter = parameter
    }

    public var description: String {
        if let parameter { return "WalletDeepLinkError.\(code) (\(parameter))" }
        return "WalletDeepLinkError.\(code)"
    }
}
