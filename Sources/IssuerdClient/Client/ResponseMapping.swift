import Foundation

/// Turns issuerd's answers into values or ``IssuerdClientError``s, following the statuses
/// and error envelope of docs/openapi.yaml.
enum ResponseMapping {
    /// Decodes a 2xx body.
    static func decode<T: Decodable>(_ type: T.Type, from reply: HTTPReply) throws(IssuerdClientError) -> T {
        do {
            return try JSONDecoder().decode(type, from: reply.body)
        } catch {
            throw .invalidResponse("body is not a valid \(T.self)", requestId: reply.requestId)
        }
    }

    /// The error envelope of a non-2xx answer, if it has one.
    static func errorBody(of reply: HTTPReply) -> ErrorBody? {
        try? JSONDecoder().decode(ErrorEnvelope.self, from: reply.body).error
    }

    /// A 403 `provisioning_declined` as the typed outcome it is.
    static func decline(in reply: HTTPReply) -> ProvisioningResult? {
        guard reply.status == 403, let body = errorBody(of: reply), body.code == "provisioning_declined",
            let attemptId = body.attemptId, !attemptId.isEmpty
        else { return nil }
        return .declined(attemptId: attemptId, reasons: body.reasons ?? [])
    }

    /// The error for a non-2xx answer.
    static func error(for reply: HTTPReply) -> IssuerdClientError {
        let body = errorBody(of: reply)
        let requestId = body?.requestId ?? reply.requestId
        switch reply.status {
        case 401:
            return .unauthenticated(requestId: requestId)
        case 403 where body?.code == "provisioning_declined":
            return .invalidResponse("decline without an attemptId", requestId: requestId)
        case 403:
            return IssuerdClientError(
                .forbidden, status: 403, serverCode: body?.code, requestId: requestId, file: #fileID, line: #line)
        case 404:
            return .notFound(requestId: requestId)
        case 409:
            return .conflict(serverCode: body?.code, requestId: requestId)
        case 422 where body?.code == "certificate_chain_invalid":
            return .invalidCertificateChain(detail: body?.detail.map { String($0.prefix(200)) }, requestId: requestId)
        case 429:
            return .throttled(retryAfter: reply.retryAfter, requestId: requestId)
        case 400..<500:
            return IssuerdClientError(
                .badRequest, status: reply.status, serverCode: body?.code, requestId: requestId, file: #fileID,
                line: #line)
        case 500..<600:
            return .server(status: reply.status, code: body?.code, requestId: requestId)
        default:
            return .invalidResponse("unexpected status \(reply.status)", requestId: requestId)
        }
    }
}
