import IssuerdHTTP

/// The error answers of the step-up routes (codes from docs/api-errors.md).
///
/// Kept in a namespace rather than as `HTTPError.Code` statics so they cannot collide with the
/// same codes declared by other route groups.
enum StepUpError {
    /// 404 `token_not_found`: unknown, or not the caller's (existence never leaks).
    static func tokenNotFound(file: String = #fileID, line: Int = #line) -> HTTPError {
        HTTPError(status: 404, code: "token_not_found", message: "no such token", file: file, line: line)
    }

    /// 404 `activation_method_not_found`: the `activationMethodId` names no method.
    static func methodNotFound(file: String = #fileID, line: Int = #line) -> HTTPError {
        HTTPError(status: 404, code: "activation_method_not_found", message: "no such activation method", file: file, line: line)
    }

    /// 422 `activation_method_not_allowed`: the risk decision did not offer this method (e.g. SMS
    /// to a phone number changed recently), or the customer has no destination for it.
    static func methodNotAllowed(_ message: String, file: String = #fileID, line: Int = #line) -> HTTPError {
        HTTPError(status: 422, code: "activation_method_not_allowed", message: message, file: file, line: line)
    }

    /// 409 `invalid_state`.
    static func invalidState(_ message: String, file: String = #fileID, line: Int = #line) -> HTTPError {
        HTTPError(status: 409, code: "invalid_state", message: message, file: file, line: line)
    }

    /// 429 `rate_limited` with `Retry-After`.
    static func rateLimited(retryAfter seconds: Int, file: String = #fileID, line: Int = #line) -> HTTPError {
        HTTPError(
            status: 429, code: "rate_limited", message: "too many requests; try again later",
            headers: ["Retry-After": String(max(1, seconds))], file: file, line: line)
    }

    /// 400 `invalid_request`.
    static func invalidRequest(_ message: String, file: String = #fileID, line: Int = #line) -> HTTPError {
        HTTPError(status: 400, code: "invalid_request", message: message, file: file, line: line)
    }

    /// 404 `message_not_found`.
    static func messageNotFound(file: String = #fileID, line: Int = #line) -> HTTPError {
        HTTPError(status: 404, code: "message_not_found", message: "no such outbox message", file: file, line: line)
    }
}
