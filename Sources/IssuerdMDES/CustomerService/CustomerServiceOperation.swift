/// The four token operations of the MDES Customer Service API that issuerd calls
/// (Mastercard's "MDES Customer Service API", specification 2.1.7).
///
/// Each is `POST {base}/token/{name}` where the base ends in the fixed `/v2` segment; the body is
/// one object named `Token<Op>Request`, the answer one named `Token<Op>Response`.
public enum CustomerServiceOperation: String, Sendable, CaseIterable, Codable {
    /// Activate a token awaiting issuer-side ID&V (yellow path).
    case activate
    /// ACTIVE → SUSPENDED, the issuer added as a suspender.
    case suspend
    /// Remove the issuer's own suspension (other suspenders stay).
    case unsuspend
    /// Delete the token for good.
    case delete

    /// The path after the `/v2` base, e.g. `/token/suspend`.
    public var path: String { "/token/\(rawValue)" }

    /// The name of the request's root object, e.g. `TokenSuspendRequest`.
    public var requestRoot: String { "Token\(capitalized)Request" }

    /// The name of the answer's root object, e.g. `TokenSuspendResponse`.
    public var responseRoot: String { "Token\(capitalized)Response" }

    /// The one-character `ReasonCode`s Mastercard accepts for this operation.
    public var allowedReasonCodes: Set<Character> {
        switch self {
        // A: cardholder authenticated with an activation method (code, issuer app);
        // C: authenticated with a customer service agent.
        case .activate: ["A", "C"]
        // L device lost, S device stolen, T suspected fraudulent token transactions, Z other.
        case .suspend: ["L", "S", "T", "Z"]
        // F device found or not stolen, T confirmed no fraud, Z other.
        case .unsuspend: ["F", "T", "Z"]
        // L lost, S stolen, F fraud (deprecated), T fraud confirmed, C account closed,
        // D issuer consumer deleted, Z other.
        case .delete: ["L", "S", "F", "T", "C", "D", "Z"]
        }
    }

    private var capitalized: String { rawValue.prefix(1).uppercased() + rawValue.dropFirst() }
}
