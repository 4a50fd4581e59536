import Foundation
import IssuerdAuth
import IssuerdCrypto
import IssuerdHTTP
import IssuerdOutbox
import IssuerdPostgres
import IssuerdStorage
import IssuerdWire

/// Checks an entered code (`POST /v1/tsp/activation-codes/verify`).
///
/// Everything happens in one transaction holding the token's row lock, so a code is single
/// use even when two instances verify it at the same moment: the second sees the token active
/// (409) or the challenge no longer pending. Wrong, expired and locked entries are answers, and
/// each writes a `challenge_failures` row that the risk rules' `failed_otps` velocity reads.
struct ChallengeVerifier: Sendable {
    let database: PostgresPool
    let vault: PANVault
    let metrics: StepUpMetrics

    /// Who is verifying: the TSP, or an IVR system for codes read out by an ARS call.
    enum Caller: Sendable {
        case tsp
        case ivr(auditActor: String)
        /// MDES's Validate Activation Code.
        case mdes

        var isIVR: Bool {
            if case .ivr = self { return true }
            return false
        }

        var auditActor: String {
            switch self {
            case .tsp: "tsp"
            case .mdes: "mdes"
            case .ivr(let actor): actor
            }
        }
    }

    /// Verifies `request.code` against the token's current challenge.
    ///
    /// - Throws: 400 oversized fields, 404 unknown token, 409 token not awaiting verification or
    ///   no code requested, 403 an IVR caller for a challenge not delivered by ARS.
    func verify(
        _ request: ActivationCodeVerifyRequest, caller: Caller, now: Date
    ) throws -> ActivationCodeVerifyResponse {
        guard (1...128).contains(request.tokenReference.utf8.count) else {
            throw APIErrors.invalidRequest("tokenReference must be 1 to 128 bytes")
        }
        guard request.code.utf8.count <= 32 else {
            throw APIErrors.invalidRequest("code must be at most 32 characters")
        }
        var method = "unknown"
        let response = try database.transaction { connection -> ActivationCodeVerifyResponse in
            try verify(
                tokenReference: request.tokenReference, code: request.code, caller: caller, now: now,
                connection: connection, method: &method)
        }
        metrics.record(method: method, result: response.result)
        return response
    }

    /// Verifies `code` against the token's current challenge in the caller's transaction.
    ///
    /// - Parameters:
    ///   - notifyTSP: Whether a verified code queues the TSP's activation (false for MDES,
    ///     which completes the provisioning itself on `SUCCESS`).
    ///   - method: Set to the challenge's method once known (for the metrics).
    func verify(
        tokenReference: String, code: String, caller: Caller, now: Date, connection: PostgresConnection,
        notifyTSP: Bool = true, method: inout String
    ) throws -> ActivationCodeVerifyResponse {
        guard let token = try StepUpToken.lock(tokenReference, connection: connection) else {
            throw APIErrors.tokenNotFound()
        }
        guard token.status == StepUpToken.awaitingVerification else {
            throw APIErrors.invalidState("the token is not awaiting verification")
        }
        guard
            let row = try connection.query(
                """
                SELECT challenge_id, method, code_hmac, status, failed_attempts, max_attempts, expires_at FROM challenges
                WHERE token_reference = \(token.tokenReference) AND method <> 'app' AND status <> 'superseded'
                ORDER BY created_at DESC LIMIT 1
                """
            ).first
        else { throw APIErrors.invalidState("no one-time code was requested for this token") }
        let challengeID: UUID = try row.decode("challenge_id")
        let challengeText = challengeID.uuidString.lowercased()
        method = try row.decode("method")
        if case .ivr = caller, method != StepUpMethod.ars.rawValue {
            throw HTTPError.forbidden("an IVR key may verify only codes delivered by an ARS call")
        }
        let failed: Int = try row.decode("failed_attempts")
        let maxAttempts: Int = try row.decode("max_attempts")
        switch try row.decode("status", as: String.self) {
        case "locked": return ActivationCodeVerifyResponse(result: "locked", attemptsRemaining: 0)
        case "expired":
            return ActivationCodeVerifyResponse(result: "expired", attemptsRemaining: max(0, maxAttempts - failed))
        case "pending": break
        default: throw APIErrors.invalidState("the code is no longer valid")
        }
        let subject = "token:\(token.tokenReference)"
        if try row.decode("expires_at", as: Date.self) <= now {
            try connection.execute(
                "UPDATE challenges SET status = 'expired' WHERE challenge_id = \(challengeID) AND status = 'pending'"
            )
            try Self.recordFailure(
                "expired", challengeID: challengeID, token: token, now: now, connection: connection)
            return ActivationCodeVerifyResponse(result: "expired", attemptsRemaining: max(0, maxAttempts - failed))
        }
        let digest = try row.decode("code_hmac", as: [UInt8]?.self) ?? []
        let matches =
            try OneTimeCode.isWellFormed(code)
            && vault.otpMatches(code: code, challengeId: challengeText, digest: digest)
        if matches {
            // Conditional on `pending`, so even without the token lock only one caller could win.
            let won = try connection.execute(
                "UPDATE challenges SET status = 'verified', verified_at = \(now) WHERE challenge_id = \(challengeID) AND status = 'pending'"
            )
            guard won == 1 else { throw APIErrors.invalidState("the code was already used") }
            try StepUpToken.activate(token.tokenReference, cardID: token.cardID, now: now, connection: connection)
            if notifyTSP {
                // A code checked by the issuer's IVR is the call centre's verification (Mastercard's `C`).
                try token.queueActivation(
                    reason: "step_up_verified", mdesChange: caller.isIVR ? .callCentreVerified : .codeVerified,
                    occurrence: challengeText, connection: connection)
            }
            try AuditLog.append(
                actor: caller.auditActor, action: "challenge.verified", subject: subject,
                details: ["challengeId": challengeText, "method": method], at: now, connection: connection)
            return ActivationCodeVerifyResponse(result: "verified", attemptsRemaining: max(0, maxAttempts - failed))
        }
        let failures = failed + 1
        try Self.recordFailure(
            "wrong_code", challengeID: challengeID, token: token, now: now, connection: connection)
        if failures >= maxAttempts {
            try connection.execute(
                "UPDATE challenges SET status = 'locked', failed_attempts = \(failures) WHERE challenge_id = \(challengeID)"
            )
            try Self.recordFailure(
                "locked", challengeID: challengeID, token: token, now: now, connection: connection)
            try AuditLog.append(
                actor: caller.auditActor, action: "challenge.locked", subject: subject,
                details: ["challengeId": challengeText, "method": method, "failedAttempts": String(failures)],
                at: now, connection: connection)
            return ActivationCodeVerifyResponse(result: "locked", attemptsRemaining: 0)
        }
        try connection.execute(
            "UPDATE challenges SET failed_attempts = \(failures) WHERE challenge_id = \(challengeID)")
        return ActivationCodeVerifyResponse(result: "invalid", attemptsRemaining: maxAttempts - failures)
    }

    private static func recordFailure(
        _ kind: String, challengeID: UUID, token: StepUpToken, now: Date, connection: PostgresConnection
    ) throws {
        try connection.execute(
            """
            INSERT INTO challenge_failures (challenge_id, card_id, customer_id, kind, at)
            VALUES (\(challengeID), \(token.cardID), \(token.customerID), \(kind), \(now))
            """)
    }
}
