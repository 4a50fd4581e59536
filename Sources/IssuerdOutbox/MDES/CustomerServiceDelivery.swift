import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdMDES
import IssuerdPostgres

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Delivers `mdes_csapi` messages: one signed Customer Service API call each.
///
/// Mastercard's answer decides the outcome: `Token<Op>Response` delivers the message; an
/// `Errors` answer whose errors are all `Recoverable: "true"` (or a 408, 429, 5xx without errors,
/// or no answer at all) is retried with the outbox's backoff; anything else is a dead letter at
/// once, its `ReasonCode`s in `last_error` and every error in `mdes_csapi_errors`.
package struct CustomerServiceDelivery: Sendable {
    package let client: CustomerServiceClient
    package let auditInfo: AuditInfo

    /// A delivery to `settings.baseURL`, signed by `signingKey` as `settings.consumerKey`.
    package init(
        settings: MDESCustomerServiceSettings, signingKey: any RSASigningKey, timeout: Duration,
        userAgent: String = BuildInfo.unknown.userAgent
    ) {
        client = CustomerServiceClient(
            baseURL: settings.baseURL.absoluteString,
            signer: MastercardOAuth1Signer(consumerKey: settings.consumerKey, signingKey: signingKey),
            transport: URLSessionTransport(poster: HTTPPoster(timeout: timeout, userAgent: userAgent)))
        auditInfo = settings.auditInfo
    }

    /// A delivery through `client` (tests give their own transport).
    package init(client: CustomerServiceClient, auditInfo: AuditInfo) {
        self.client = client
        self.auditInfo = auditInfo
    }

    /// Makes the call `message` describes.
    ///
    /// - Throws: ``OutboxError``: `.unreadablePayload` (dead letter) for a payload that is no
    ///   valid request, `.transport` when no answer came, `.mastercardRefused` with Mastercard's
    ///   errors.
    /// - Returns: The tokens a `/token/update` answer listed as updated; nil for other calls.
    @discardableResult
    package func deliver(_ message: OutboxStore.Claimed) throws -> [String]? {
        if let update = try? message.payload.decode(MDESTokenUpdatePayload.self), update.action == "update" {
            return try deliver(update)
        }
        guard let payload = try? message.payload.decode(MDESCustomerServicePayload.self) else {
            throw OutboxError(.unreadablePayload, "MDES payload does not decode", deadLetter: true)
        }
        let request: CustomerServiceRequest
        do {
            request = try payload.request(auditInfo: auditInfo)
        } catch {
            throw OutboxError(.unreadablePayload, "MDES request not valid: \(error)", deadLetter: true)
        }
        let outcome = try sending { try client.send(request) }
        switch outcome {
        case .accepted: return nil
        case .refused(let failure):
            throw OutboxError(
                .mastercardRefused, "\(request.operation.rawValue): \(failure)", deadLetter: !failure.recoverable,
                mastercard: MastercardRefusal(
                    tokenReference: payload.tokenReference, operation: request.operation.rawValue, failure: failure))
        }
    }
}

extension CustomerServiceDelivery {
    /// Makes a reissue's `/token/update` call.
    private func deliver(_ payload: MDESTokenUpdatePayload) throws -> [String] {
        let update: CustomerServiceTokenUpdate
        do {
            update = try CustomerServiceTokenUpdate(
                encryptedAccountInformation: payload.encryptedAccountInformation, notifyWallet: payload.notifyWallet,
                commentText: payload.commentText, auditInfo: auditInfo)
        } catch {
            throw OutboxError(.unreadablePayload, "MDES update not valid: \(error)", deadLetter: true)
        }
        switch try sending({ try client.send(update) }) {
        case .updated(let tokens): return tokens
        case .refused(let failure):
            throw OutboxError(
                .mastercardRefused, "update: \(failure)", deadLetter: !failure.recoverable,
                mastercard: MastercardRefusal(
                    tokenReference: payload.tokenReference, operation: "update", failure: failure))
        }
    }

    /// Runs `call`, its errors told as the outbox records them (no answer: transport, retried).
    private func sending<Outcome>(_ call: () throws -> Outcome) throws -> Outcome {
        do {
            return try call()
        } catch let error as OutboxError {
            throw error
        } catch let error as MastercardOAuthError {
            throw OutboxError(.rejected, "cannot sign: \(error)")
        } catch {
            throw OutboxError(.transport, "signing or sending failed (\(type(of: error)))")
        }
    }
}

/// Mastercard's refusal of one call, as recorded.
package struct MastercardRefusal: Sendable {
    package var tokenReference: String
    package var operation: String
    package var failure: CustomerServiceFailure

    /// Inserts one `mdes_csapi_errors` row per error (one row with only the status when the
    /// answer carried none), within the caller's transaction.
    package func record(outboxID: Int64, attempt: Int, connection: PostgresConnection) throws {
        let errors = failure.errors.isEmpty ? [nil] : failure.errors.map { Optional($0) }
        for error in errors {
            try connection.execute(
                """
                INSERT INTO mdes_csapi_errors (outbox_id, attempt, token_reference, operation, http_status, source,
                                               reason_code, error_code, description, recoverable)
                VALUES (\(outboxID), \(attempt), \(tokenReference), \(operation), \(failure.httpStatus), \(error?.source),
                        \(error?.reasonCode), \(error?.errorCode), \(error?.errorDescription), \(error?.recoverable))
                """)
        }
    }
}

/// The outbox's `URLSession` POST as the client's transport.
struct URLSessionTransport: CustomerServiceTransport {
    let poster: HTTPPoster

    func post(url: String, headers: [(String, String)], body: [UInt8]) throws -> (status: Int, body: [UInt8]) {
        guard let target = URL(string: url) else { throw OutboxError(.rejected, "not a URL", deadLetter: true) }
        return try poster.post(url: target, headers: headers, body: body)
    }
}
