import IssuerdCore
import IssuerdHTTP

/// The error answers only the decision path gives (provisioning, TSP authorization, token
/// events, attempts), with the codes of docs/api-errors.md; shared ones are in ``APIErrors``.
enum DecisionErrors {

    /// 404 `attempt_not_found`.
    static func attemptNotFound(file: String = #fileID, line: Int = #line) -> HTTPError {
        HTTPError(status: 404, code: "attempt_not_found", message: "no such attempt", file: file, line: line)
    }

    /// 403 `provisioning_declined` with the orange decision.
    static func declined(
        attemptID: String, reasons: [JSONValue], wallet: String = "Apple Pay", file: String = #fileID,
        line: Int = #line
    ) -> HTTPError {
        HTTPError(
            status: 403, code: "provisioning_declined", message: "the card cannot be added to \(wallet) now",
            context: ["flow": "orange", "attemptId": .string(attemptID), "reasons": .array(reasons)], file: file,
            line: line)
    }

    /// 422 `certificate_chain_invalid`, `detail` naming the failed check.
    static func chainInvalid(detail: String, attemptID: String, file: String = #fileID, line: Int = #line) -> HTTPError
    {
        HTTPError(
            status: 422, code: "certificate_chain_invalid", message: "the PassKit certificate chain does not verify",
            context: ["detail": .string(detail), "attemptId": .string(attemptID)], file: file, line: line)
    }

    /// 422 `encryption_scheme_unsupported`.
    static func schemeUnsupported(_ scheme: String, file: String = #fileID, line: Int = #line) -> HTTPError {
        HTTPError(
            status: 422, code: "encryption_scheme_unsupported", message: "this encryption scheme is not enabled",
            context: ["detail": .string("\(scheme) is not enabled on this server (ISSUERD_ENABLE_RSA_V2)")], file: file,
            line: line)
    }

}
