/// A request refused below the API, said without HTTP: what kind of refusal, its error code
/// (docs/api-errors.md), a message safe to show the caller, and context that names a field but
/// never echoes a value.
///
/// Storage, history, import, the outbox and authentication throw it; IssuerdAPI gives each kind
/// its HTTP status in one place (`HTTPError(_ refusal:)`).
public struct Refusal: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, as the caller must understand it.
    public enum Kind: Sendable, Equatable {
        /// A value is malformed or out of its bounds.
        case invalid
        /// No credential, or one that does not check out.
        case unauthenticated
        /// What the request names does not exist, or is not the caller's (existence never leaks).
        case notFound
        /// It conflicts with what is stored: it exists already, the state does not allow the
        /// change, a key was used for another request.
        case conflict
        /// Well formed but not acceptable: a card failing the Luhn check, or expired.
        case unacceptable
        /// Busy now: try again after this many seconds.
        case busy(retryAfter: Int)
    }

    public var kind: Kind
    /// The stable error code, e.g. `invalid_request`.
    public var code: String
    /// A sentence safe to send to the caller.
    public var message: String
    /// Extra envelope members (a field's name, a detail), never a value the caller sent.
    public var context: [String: JSONValue]
    /// Where it was thrown, for the log of an unexpected one.
    public var file: String
    public var line: Int

    /// Creates the value from every stored property.
    public init(
        _ kind: Kind, code: String, message: String, context: [String: JSONValue] = [:], file: String = #fileID,
        line: Int = #line
    ) {
        self.kind = kind
        self.code = code
        self.message = message
        self.context = context
        self.file = file
        self.line = line
    }

    /// `invalid_request`: a value out of its bounds or enumeration; `field` names it.
    public static func invalidRequest(
        _ message: String, field: String? = nil, file: String = #fileID, line: Int = #line
    ) -> Refusal {
        Refusal(
            .invalid, code: "invalid_request", message: message,
            context: field.map { ["field": .string($0)] } ?? [:], file: file, line: line)
    }

    /// `invalid_state`: the change is not allowed from the current state.
    public static func invalidState(_ message: String, file: String = #fileID, line: Int = #line) -> Refusal {
        Refusal(.conflict, code: "invalid_state", message: message, file: file, line: line)
    }

    public static func == (lhs: Refusal, rhs: Refusal) -> Bool {
        lhs.kind == rhs.kind && lhs.code == rhs.code && lhs.message == rhs.message && lhs.context == rhs.context
    }

    public var description: String { "\(code): \(message)" }
}
