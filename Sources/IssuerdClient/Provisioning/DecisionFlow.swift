/// issuerd's risk flow for an attempt: green approves, yellow approves with step-up at the card
/// network, orange declines.
///
/// A struct rather than an enum so that a flow added to the server does not break decoding.
public struct DecisionFlow: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The wire value, e.g. `green`.
    public let rawValue: String

    /// Wraps a wire value.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Approved outright.
    public static let green = DecisionFlow(rawValue: "green")
    /// Approved; the card network will ask for step-up before the token activates.
    public static let yellow = DecisionFlow(rawValue: "yellow")
    /// Declined.
    public static let orange = DecisionFlow(rawValue: "orange")

    public var description: String { rawValue }
}
