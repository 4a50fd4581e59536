/// The step-up methods a yellow decision may offer.
public struct StepUpMethods: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// One-time code by text message.
    public static let sms = StepUpMethods(rawValue: 1 << 0)
    /// Automated voice call (ARS) or a call to the cardholder.
    public static let ars = StepUpMethods(rawValue: 1 << 1)
    /// One-time code by e-mail.
    public static let email = StepUpMethods(rawValue: 1 << 2)
    /// The issuer's app (In-App Verification).
    public static let app = StepUpMethods(rawValue: 1 << 3)
    /// Every method.
    public static let all: StepUpMethods = [.sms, .ars, .email, .app]

    /// The names rules write, in bit order.
    public static let names = ["sms", "ars", "email", "app"]

    /// The method named `name`, or nil.
    public init?(name: String) {
        guard let index = Self.names.firstIndex(of: name) else { return nil }
        self.init(rawValue: 1 << UInt8(index))
    }

    /// The methods named in `names` (a stored attempt's `allowed_methods`); unknown names are skipped.
    public init(names: some Sequence<String>) {
        self = names.reduce(into: StepUpMethods()) { methods, name in
            if let method = StepUpMethods(name: name) { methods.formUnion(method) }
        }
    }

    /// The names of the methods in this set.
    public var methodNames: [String] {
        Self.names.indices.filter { rawValue & (1 << UInt8($0)) != 0 }.map { Self.names[$0] }
    }

    public var description: String { "[" + methodNames.joined(separator: ", ") + "]" }
}

/// A decision's flow, ordered by severity.
public enum Flow: Int, Sendable, Hashable, Comparable, CaseIterable, CustomStringConvertible {
    /// Approve and activate at once.
    case green
    /// Approve after a step-up.
    case yellow
    /// Decline.
    case orange

    public static func < (a: Flow, b: Flow) -> Bool { a.rawValue < b.rawValue }

    /// The name rules and reports use.
    public var description: String {
        switch self {
        case .green: "green"
        case .yellow: "yellow"
        case .orange: "orange"
        }
    }

    /// The flow named `name`, or nil.
    public init?(name: String) {
        guard let flow = Flow.allCases.first(where: { $0.description == name }) else { return nil }
        self = flow
    }
}

/// Whether a rule's hits decide (live) or are only recorded (shadow).
public enum RuleMode: String, Sendable, Hashable {
    /// Hits decide the flow.
    case live
    /// Hits are recorded only.
    case shadow
}
