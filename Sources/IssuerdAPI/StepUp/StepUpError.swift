import IssuerdHTTP

/// The error answers only the step-up routes give (codes from docs/api-errors.md); shared ones
/// are in ``APIErrors``.
enum StepUpError {

    /// 404 `activation_method_not_found`: the `activationMethodId` names no method.
    static func methodNotFound(file: String = #fileID, line: Int = #line) -> HTTPError {
        HTTPError(
            status: 404, code: "activation_method_not_found", message: "no such activation method", file: file,
            line: line)
    }

    /// 422 `activation_method_not_allowed`: the risk decision did not offer this method (e.g. SMS
    /// to a phone number changed recently), or the customer has no destination for it.
    static func methodNotAllowed(_ message: String, file: String = #fileID, line: Int = #line) -> HTTPError {
        HTTPError(status: 422, code: "activation_method_not_allowed", message: message, file: file, line: line)
    }
}
