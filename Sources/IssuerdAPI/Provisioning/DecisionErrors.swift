import IssuerdHTTP

/// The error answers of the decision path (provisioning, TSP authorization, token events,
/// attempts), with the codes of docs/api-errors.md.
///
/// A namespace rather than `HTTPError.Code` members so that other route groups defining the
/// same codes never collide at compile time.
enum DecisionErrors {
    /// 400 `invalid_request`: a value out of its bounds or enumeration.
    static func invalidRequest(_ message: String, field: String? = nil, file: String = #fileID, line: Int = #line) -> HTTPError {
        HTTPError(status: 400, code: "invalid_request", message: message, context: field.map { ["field": .string($0)] } ?? [:], file: file, line: line)
    }

    /// 404 `card_not_found`: missing, or another customer's (existence never leaks).
    static func cardNotFound(file: String = #fileID, line: Int = #line) -> HTTPError {
        HTTPError(status: 404, code: "card_not_found", message: "no such card", file: file, line: line)
    }

    /// 404 `token_not_found`.
    static func tokenNotFound(file: String = #fileID, line: Int = #line) -> HTTPError {
        HTTPError(status: 404, code: "token_not_found", message: "no such token", file: file, line: line)
    }

    /// 404 `attempt_not_found`.
    static func attemptNotFound(file: String = #fileID, line: Int = #line) -> HTTPError {
        HTTPError(status: 404, code: "attempt_not_found", message: "no such attempt", file: file, line: line)
    }

    /// 409 `invalid_state`.
    static func invalidState(_ message: String, file: String = #fileID, line: Int = #line) -> HTTPError {
        HTTPError(status: 409, code: "invalid_state", message: message, file: file, line: line)
    }

    /// 403 `provisioning_declined` with the orange decision.
    static func declined(attemptID: String, reasons: [JSONValue], file: String = #fileID, line: Int = #line) -> HTTPError {
        HTTPError(
            status: 403, code: "provisioning_declined", message: "the card cannot be added to Apple Pay now",
            context: ["flow": "orange", "attemptId": .string(attemptID), "reasons": .array(reasons)], file: file, line: line)
    }

    /// 422 `certificate_chain_invalid`, `detail` naming the failed check.
    static func chainInvalid(detail: String, attemptID: String, file: String = #fileID, line: Int = #line) -> HTTPError {
        HTTPError(
            status: 422, code: "certificate_chain_invalid", message: "the PassKit certificate chain does not verify",
            context: ["detail": .string(detail), "attemptId": .string(attemptID)], file: file, line: line)
    }

    /// 422 `encryption_scheme_unsupported`.
    static func schemeUnsupported(_ scheme: String, file: String = #fileID, line: Int = #line) -> HTTPError {
        HTTPError(
            status: 422, code: "encryption_scheme_unsupported", message: "this encryption scheme is not enabled",
            context: ["detail": .string("\(scheme) is not enabled on this server (ISSUERD_ENABLE_RSA_V2)")], file: file, line: line)
    }

    /// 429 `rate_limited` with `Retry-After` in whole seconds.
    static func rateLimited(retryAfter seconds: Int, file: String = #fileID, line: Int = #line) -> HTTPError {
        HTTPError(
            status: 429, code: "rate_limited", message: "too many provisioning requests; retry later",
            headers: ["Retry-After": String(max(1, seconds))], file: file, line: line)
    }
}
