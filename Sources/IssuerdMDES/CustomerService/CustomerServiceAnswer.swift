import Foundation

/// What the Customer Service API answered to one call.
public enum CustomerServiceOutcome: Sendable, Equatable {
    /// `Token<Op>Response` with the token's reference (and `CommentId` when a comment was sent).
    case accepted(tokenUniqueReference: String?, commentID: String?)
    /// An `Errors` answer, or a status without the expected body.
    case refused(CustomerServiceFailure)

    /// Reads an answer of `operation` (MDES Customer Service API).
    ///
    /// An `Errors.Error[]` list anywhere (Mastercard may send it with 200) is a refusal; a 2xx
    /// whose body is not `Token<Op>Response` is a refusal too (recoverable: a proxy's page, not
    /// Mastercard's answer). Whether a refusal is worth another try follows each error's
    /// `Recoverable`; without one, 408, 429 and 5xx are, every other status is not.
    ///
    /// - Parameters:
    ///   - status: The HTTP status.
    ///   - body: The answer's bytes (only the first 64 KiB are read).
    public static func interpret(
        _ operation: CustomerServiceOperation, status: Int, body: [UInt8]
    ) -> CustomerServiceOutcome {
        let statusRetryable = status == 408 || status == 429 || status >= 500
        let object = CustomerServiceFailure.object(body)
        if let failure = CustomerServiceFailure.listed(in: object, status: status) { return .refused(failure) }
        if (200..<300).contains(status), let root = object?[operation.responseRoot] as? [String: Any] {
            let token = root["Token"] as? [String: Any]
            return .accepted(
                tokenUniqueReference: (token?["TokenUniqueReference"] as? String).map {
                    CustomerServiceError.bounded($0, 64)
                },
                commentID: (token?["CommentId"] as? String).map { CustomerServiceError.bounded($0, 256) })
        }
        return .refused(
            CustomerServiceFailure(
                httpStatus: status, errors: [], recoverable: statusRetryable || (200..<300).contains(status)))
    }
}

/// What Mastercard answered to a `/token/update` call.
public enum CustomerServiceUpdateOutcome: Sendable, Equatable {
    /// `TokenUpdateResponse.Tokens.Token[]`: the references of the tokens actually updated.
    case updated([String])
    /// An `Errors` answer, or a status without the expected body.
    case refused(CustomerServiceFailure)

    /// Reads an answer of `/token/update`, its errors judged as ``CustomerServiceOutcome`` does.
    public static func interpret(status: Int, body: [UInt8]) -> CustomerServiceUpdateOutcome {
        let object = CustomerServiceFailure.object(body)
        if let failure = CustomerServiceFailure.listed(in: object, status: status) { return .refused(failure) }
        if (200..<300).contains(status), let root = object?["TokenUpdateResponse"] as? [String: Any] {
            let list = (root["Tokens"] as? [String: Any])?["Token"]
            let entries = (list as? [Any]) ?? (list.map { [$0] } ?? [])
            return .updated(
                entries.prefix(1000).compactMap { ($0 as? [String: Any])?["TokenUniqueReference"] as? String }
                    .map { CustomerServiceError.bounded($0, 64) })
        }
        return .refused(
            CustomerServiceFailure(
                httpStatus: status, errors: [],
                recoverable: status == 408 || status == 429 || status >= 500 || (200..<300).contains(status)))
    }
}

/// A refused call: the status, Mastercard's errors, and whether trying again may succeed.
public struct CustomerServiceFailure: Sendable, Equatable, CustomStringConvertible {
    /// The answer as a JSON object, when it is one of at most 64 KiB.
    static func object(_ body: [UInt8]) -> [String: Any]? {
        body.count <= 65536 ? (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] : nil
    }

    /// The refusal an `Errors.Error[]` list in `object` makes (Mastercard may send it with 200);
    /// each error's `Recoverable` decides, and without one the status does.
    static func listed(in object: [String: Any]?, status: Int) -> CustomerServiceFailure? {
        guard let list = ((object?["Errors"] as? [String: Any])?["Error"]) else { return nil }
        let statusRetryable = status == 408 || status == 429 || status >= 500
        let entries = (list as? [Any]) ?? [list]
        let errors = entries.compactMap { $0 as? [String: Any] }.prefix(20).map(CustomerServiceError.init(json:))
        guard !errors.isEmpty else { return nil }
        return CustomerServiceFailure(
            httpStatus: status, errors: Array(errors),
            recoverable: errors.allSatisfy { $0.recoverable ?? statusRetryable })
    }

    public let httpStatus: Int
    public let errors: [CustomerServiceError]
    /// False when any error says `Recoverable: "false"` (or, without errors, for a 4xx other than
    /// 408 and 429): the same request will not succeed later, so it is not tried again.
    public let recoverable: Bool

    /// Creates the value from every stored property.
    public init(httpStatus: Int, errors: [CustomerServiceError], recoverable: Bool) {
        self.httpStatus = httpStatus
        self.errors = errors
        self.recoverable = recoverable
    }

    /// `HTTP 400 INVALID_TOKEN_STATUS (E0010039, source TokenUniqueReference, recoverable false): …`
    /// for each error; safe to log and store (the request carried no card data).
    public var description: String {
        guard !errors.isEmpty else {
            return "HTTP \(httpStatus) without Mastercard errors, recoverable \(recoverable)"
        }
        return "HTTP \(httpStatus) " + errors.map(\.description).joined(separator: "; ")
    }
}

/// One entry of Mastercard's `Errors.Error[]`: `Source` (6–64), `ReasonCode` (5–100),
/// `ErrorCode` (4–100), `Description` (5–256), `Recoverable` (`"true"`/`"false"`).
///
/// Every value is cut to its schema length and stripped of control characters, so what is stored
/// and logged stays bounded whatever the answer holds.
public struct CustomerServiceError: Sendable, Equatable, CustomStringConvertible {
    public let source: String?
    public let reasonCode: String?
    public let errorCode: String?
    public let errorDescription: String?
    /// Nil when absent or neither `true` nor `false`.
    public let recoverable: Bool?

    /// Creates the value from every stored property.
    public init(
        source: String?, reasonCode: String?, errorCode: String?, errorDescription: String?, recoverable: Bool?
    ) {
        self.source = source
        self.reasonCode = reasonCode
        self.errorCode = errorCode
        self.errorDescription = errorDescription
        self.recoverable = recoverable
    }

    init(json: [String: Any]) {
        source = (json["Source"] as? String).map { Self.bounded($0, 64) }
        reasonCode = (json["ReasonCode"] as? String).map { Self.bounded($0, 100) }
        errorCode = (json["ErrorCode"] as? String).map { Self.bounded($0, 100) }
        errorDescription = (json["Description"] as? String).map { Self.bounded($0, 256) }
        switch json["Recoverable"] {
        case let flag as Bool: recoverable = flag
        case let text as String where text.lowercased() == "true": recoverable = true
        case let text as String where text.lowercased() == "false": recoverable = false
        default: recoverable = nil
        }
    }

    public var description: String {
        var context: [String] = []
        if let errorCode { context.append(errorCode) }
        if let source { context.append("source \(source)") }
        context.append("recoverable \(recoverable.map(String.init) ?? "unstated")")
        return "\(reasonCode ?? "NO_REASON_CODE") (\(context.joined(separator: ", ")))"
            + (errorDescription.map { ": \($0)" } ?? "")
    }

    static func bounded(_ text: String, _ limit: Int) -> String {
        String(
            String.UnicodeScalarView(text.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }).prefix(limit))
    }
}
