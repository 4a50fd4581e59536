import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdHTTP
import IssuerdOutbox
import IssuerdPostgres
import IssuerdStorage
import IssuerdWire

/// In-App Verification (`POST /v1/wallet/verifications`): the cardholder, signed in to the
/// issuer app, proves they are adding the card, so a token awaiting step-up is activated.
///
/// The answer carries activation data for `PKPassLibrary.activate(_:activationData:)` (Apple's
/// method A); when configured, the TSP activation is also queued (method B), so the token
/// activates even if the app never calls PassKit.
///
/// Google Wallet's app-to-app path (``GooglePayActivation``) activates through this same function,
/// so both wallets' tokens share its single use, rate limit and TSP activation.
struct WalletVerifier: Sendable {
    /// Which wallet's path asked: what the audit entry, the TSP message and the metric say.
    enum Route: Sendable {
        case appleInAppVerification, googleAppToApp

        var auditAction: String { self == .googleAppToApp ? "token.verified_app_to_app" : "token.verified_in_app" }
        var reason: String { self == .googleAppToApp ? "app_to_app" : "in_app_verification" }
        var metricResult: String { self == .googleAppToApp ? "app_to_app_verified" : "in_app_verified" }
    }

    let database: PostgresPool
    let vault: PANVault
    let crypto: ProvisioningCrypto
    let settings: StepUpSettings
    let metrics: StepUpMetrics

    /// Verifies the caller's token located by `request`.
    ///
    /// - Parameters:
    ///   - cardID: When given, the token must be this card's (404 otherwise).
    ///   - route: The wallet path asking.
    /// - Throws: 400 no or oversized locator, 404 not the caller's token, 409 not awaiting
    ///   verification, 429 over the per-customer hourly limit.
    func verify(
        _ request: WalletVerificationRequest, customerID: String, cardID: String? = nil,
        route: Route = .appleInAppVerification, now: Date
    ) throws -> WalletVerificationResponse {
        for value in [request.tokenReference, request.serialNumber, request.passTypeIdentifier] {
            if let value, !(1...128).contains(value.utf8.count) {
                throw APIErrors.invalidRequest("each locator must be 1 to 128 bytes")
            }
        }
        guard request.tokenReference != nil || request.serialNumber != nil else {
            throw APIErrors.invalidRequest("give tokenReference or serialNumber")
        }
        try enforceRateLimit(customerID: customerID, now: now)
        let response = try database.transaction { connection -> WalletVerificationResponse in
            guard
                let token = try StepUpToken.lock(
                    customerID: customerID, tokenReference: request.tokenReference, serialNumber: request.serialNumber,
                    passTypeIdentifier: request.passTypeIdentifier, connection: connection)
            else { throw APIErrors.tokenNotFound() }
            guard cardID == nil || token.cardID == cardID else { throw APIErrors.tokenNotFound() }
            guard token.status == StepUpToken.awaitingVerification else {
                throw APIErrors.invalidState("the token is not awaiting verification")
            }
            // As for codes (ChallengeIssuer): a decision that left the issuer app out of its
            // step-up methods (a new device, a suspected app takeover) is not overridden by it.
            if let allowed = token.allowedMethods, !allowed.contains(StepUpMethod.app.rawValue) {
                throw StepUpError.methodNotAllowed("the risk decision did not offer verification in the issuer app")
            }
            guard let card = try CardStore.find(token.cardID, connection: connection) else {
                throw APIErrors.tokenNotFound()
            }
            let pan = try CardStore.openPAN(card, vault: vault)
            let activationData = try crypto.activationProvider(network: card.paymentNetwork).activationData(
                for: ActivationDataRequest(
                    primaryAccountNumber: pan, expiration: card.expiration, cardReference: token.tokenReference,
                    nonce: [],
                    now: now))
            try connection.execute(
                "UPDATE challenges SET status = 'superseded' WHERE token_reference = \(token.tokenReference) AND status = 'pending'"
            )
            try StepUpToken.activate(token.tokenReference, cardID: token.cardID, now: now, connection: connection)
            if settings.inAppVerificationNotifiesTSP {
                // In-App Verification and the Android app-to-app path are both Mastercard's `A`.
                try token.queueActivation(
                    reason: route.reason, mdesChange: .inAppVerified,
                    occurrence: "iav:\(UUID.random().lowercasedString)", connection: connection)
            }
            try AuditLog.append(
                actor: "app:\(customerID)", action: route.auditAction, subject: "token:\(token.tokenReference)",
                details: ["cardId": token.cardID, "tspNotified": String(settings.inAppVerificationNotifiesTSP)],
                at: now, connection: connection)
            return WalletVerificationResponse(
                tokenReference: token.tokenReference, status: "active",
                activationData: BinaryEncoding.base64String(activationData))
        }
        metrics.record(method: StepUpMethod.app.rawValue, result: route.metricResult)
        return response
    }

    /// Counts every call, refused ones included, so probing for other customers' tokens is
    /// limited too. The count is in PostgreSQL so the limit holds across instances.
    private func enforceRateLimit(customerID: String, now: Date) throws {
        let windowStart = now.addingTimeInterval(-3600)
        let (count, oldest) = try database.transaction { connection -> (Int64, Date?) in
            // Serialises one customer's calls so concurrent ones cannot all slip under the limit.
            try connection.execute("SELECT pg_advisory_xact_lock(hashtext(\("iav:" + customerID))::bigint)")
            if Int.random(in: 0..<50) == 0 {
                try connection.execute(
                    "DELETE FROM wallet_verification_requests WHERE at < \(now.addingTimeInterval(-86400))")
            }
            let row = try connection.query(
                """
                SELECT count(*)::bigint AS n, min(at) AS oldest FROM wallet_verification_requests
                WHERE customer_id = \(customerID) AND at > \(windowStart)
                """
            ).first
            let count = try row?.decode("n", as: Int64.self) ?? 0
            if count < settings.inAppVerificationsPerHour {
                try connection.execute(
                    "INSERT INTO wallet_verification_requests (customer_id, at) VALUES (\(customerID), \(now))")
            }
            return (count, try row?.decode("oldest", as: Date?.self))
        }
        guard count >= settings.inAppVerificationsPerHour else { return }
        throw APIErrors.rateLimited(
            retryAfter: Int(((oldest ?? now).addingTimeInterval(3600)).timeIntervalSince(now).rounded(.up)),
            message: "too many requests; try again later")
    }
}
