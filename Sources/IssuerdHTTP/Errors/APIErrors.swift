/// The error answers that several route groups give (codes from docs/api-errors.md). Answers
/// only one group gives stay with that group (`DecisionErrors`, `StepUpError`, `RulesRoutes`).
package enum APIErrors {
    /// 400 `invalid_request`: a value out of its bounds or enumeration; `field` names it, the
    /// value itself is never echoed.
    package static func invalidRequest(
        _ message: String, field: String? = nil, file: String = #fileID, line: Int = #line
    ) -> HTTPError {
        HTTPError(
            status: 400, code: "invalid_request", message: message,
            context: field.map { ["field": .string($0)] } ?? [:], file: file, line: line)
    }

    /// 404 `card_not_found`: missing, or another customer's (existence never leaks).
    package static func cardNotFound(file: String = #fileID, line: Int = #line) -> HTTPError {
        HTTPError(status: 404, code: "card_not_found", message: "no such card", file: file, line: line)
    }

    /// 404 `token_not_found`: unknown, or not the caller's.
    package static func tokenNotFound(file: String = #fileID, line: Int = #line) -> HTTPError {
        HTTPError(status: 404, code: "token_not_found", message: "no such token", file: file, line: line)
    }

    /// 409 `invalid_state`: the change is not allowed from the current state.
    package static func invalidState(_ message: String, file: String = #fileID, line: Int = #line) -> HTTPError {
        HTTPError(status: 409, code: "invalid_state", message: message, file: file, line: line)
    }

    /// 429 `rate_limited` with `Retry-After` in whole seconds (at least 1).
    package static func rateLimited(
        retryAfter seconds: Int, message: String, file: String = #fileID, line: Int = #line
    ) -> HTTPError {
        HTTPError(
            status: 429, code: "rate_limited", message: message, headers: ["Retry-After": String(max(1, seconds))],
            file: file, line: line)
    }
}
