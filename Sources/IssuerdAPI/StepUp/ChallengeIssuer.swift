import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdHTTP
import IssuerdOutbox
import IssuerdPostgres
import IssuerdStorage
import IssuerdWire

/// Creates step-up challenges (`POST /v1/tsp/activation-codes`): one transaction locks the
/// token, checks the decision's method restriction and the hourly send limit, supersedes the
/// token's pending challenge, stores the new code's HMAC, and enqueues its delivery with the
/// code and destination sealed (see ``OutboxSealer``).
struct ChallengeIssuer: Sendable {
    let database: PostgresPool
    let vault: PANVault
    let sealer: OutboxSealer
    let settings: StepUpSettings
    let metrics: StepUpMetrics

    /// Issues a challenge for `request`.
    ///
    /// - Parameter claim: The request's `Idempotency-Key` claim: the 201 answer is stored in the
    ///   challenge's own transaction, so a retry after a lost acknowledgement gets the same
    ///   challenge back instead of a second code to the cardholder.
    /// - Throws: 404 unknown token or method, 409 token not awaiting verification, 422 method not
    ///   allowed or no destination on file, 429 over the hourly send limit.
    func issue(
        _ request: ActivationCodeRequest, now: Date, claim: IdempotencyClaim? = nil
    ) throws -> ActivationCodeResponse {
        guard (1...128).contains(request.tokenReference.utf8.count) else {
            throw APIErrors.invalidRequest("tokenReference must be 1 to 128 bytes")
        }
        guard let method = StepUpMethod(methodID: request.activationMethodId) else {
            throw StepUpError.methodNotFound()
        }
        let response = try database.transaction { connection -> ActivationCodeResponse in
            let response = try issue(
                tokenReference: request.tokenReference, method: method, now: now, connection: connection)
            // Zero rows: a retry took the claim over; rolling back sends no second code.
            if let claim, try connection.execute(claim.recording(try Self.answer(response))) != 1 {
                throw IdempotencyClaim.takenOver()
            }
            return response
        }
        claim?.markRecorded()
        metrics.record(method: method.rawValue, result: "sent")
        return response
    }

    /// Issues a challenge for the token in the caller's transaction: the token's lock, the
    /// method restriction, the send limit, the code's HMAC, its delivery through the outbox.
    ///
    /// - Parameters:
    ///   - given: A code made by the network (MDES Deliver Activation Code) with its expiry,
    ///     delivered as given; nil to generate one.
    ///   - actor: The audit log's actor.
    func issue(
        tokenReference: String, method: StepUpMethod, now: Date, connection: PostgresConnection,
        given: (code: String, expiresAt: Date)? = nil, actor: String = "tsp"
    ) throws -> ActivationCodeResponse {
        guard let token = try StepUpToken.lock(tokenReference, connection: connection) else {
            throw APIErrors.tokenNotFound()
        }
        guard token.status == StepUpToken.awaitingVerification else {
            throw APIErrors.invalidState("the token is not awaiting verification")
        }
        // The rules already removed SMS and ARS when the phone number changed recently.
        if let allowed = token.allowedMethods, !allowed.contains(method.rawValue) {
            throw StepUpError.methodNotAllowed("the risk decision did not offer \(method.rawValue) for this token")
        }
        let destination = try Self.destination(for: method, customerID: token.customerID, connection: connection)
        let destinationFingerprint = try destination.map { try vault.destinationFingerprint($0) }
        if method.sendsCode {
            try enforceSendLimit(token.tokenReference, now: now, connection: connection)
            try enforceCardholderLimit(
                customerID: token.customerID, destinationFingerprint: destinationFingerprint, now: now,
                connection: connection)
        }
        try connection.execute(
            "UPDATE challenges SET status = 'superseded' WHERE token_reference = \(token.tokenReference) AND status = 'pending'"
        )

        let challengeID = UUID.random()
        let challengeText = challengeID.lowercasedString
        // A code the network gives lives no longer than issuerd's own (ISSUERD_OTP_TTL).
        let longest = now.addingTimeInterval(settings.codeLifetime.timeInterval)
        let expiresAt = min(given?.expiresAt ?? longest, longest)
        let code = method.sendsCode ? try given?.code ?? OneTimeCode.generate() : nil
        let digest = try code.map { try vault.otpDigest(code: $0, challengeId: challengeText) }
        let masked =
            destination.map { method == .email ? DestinationMask.email($0) : DestinationMask.phone($0) }
            ?? "issuer app"
        try connection.execute(
            """
            INSERT INTO challenges (challenge_id, token_reference, card_id, customer_id, method, destination_masked, code_hmac,
                                    key_version, status, max_attempts, expires_at, created_at, destination_fingerprint)
            VALUES (\(challengeID), \(token.tokenReference), \(token.cardID), \(token.customerID), \(method.rawValue), \(masked),
                    \(digest), \(vault.keyRing.fingerprintVersion), 'pending', \(settings.maxAttempts), \(expiresAt), \(now),
                    \(destinationFingerprint))
            """)
        if let code, let destination {
            let dedupKey = "notify:\(challengeText)"
            let secret = Array(try JSONEncoder().encode(StepUpSecret(code: code, destination: destination)))
            let sealed = try sealer.seal(secret, dedupKey: dedupKey)
            let locale = MessageLocale(deviceLocale: token.deviceLocale) ?? settings.defaultLocale
            let payload = StepUpDeliveryPayload(
                challengeId: challengeText, tokenReference: token.tokenReference, method: method.rawValue,
                destinationMasked: masked,
                expiresAt: RFC3339.string(expiresAt), locale: locale.rawValue,
                validMinutes: given.map { _ in max(1, Int(expiresAt.timeIntervalSince(now) / 60)) }
                    ?? Int(settings.codeLifetime.timeInterval / 60), keyVersion: sealed.keyVersion,
                sealed: BinaryEncoding.base64String(sealed.bytes),
                wallet: token.service == "mdes" ? .any : nil)
            try OutboxStore.enqueue(kind: .notify, dedupKey: dedupKey, payload: payload, connection: connection)
            try StepUpDeliveryState.queued(challengeID, connection: connection)
        }
        try AuditLog.append(
            actor: actor, action: "challenge.created", subject: "token:\(token.tokenReference)",
            details: ["challengeId": challengeText, "method": method.rawValue, "destination": masked], at: now,
            connection: connection)
        let response = ActivationCodeResponse(
            challengeId: challengeText, method: method.rawValue, expiresAt: RFC3339.string(expiresAt))
        return response
    }

    /// The HTTP answer for `response` (201), as the route sends it and the idempotency record keeps it.
    static func answer(_ response: ActivationCodeResponse) throws -> HTTPResponse {
        try .json(response, status: 201)
    }

    /// The cardholder's phone or e-mail on file; nil for the app method.
    private static func destination(
        for method: StepUpMethod, customerID: String, connection: PostgresConnection
    ) throws -> String? {
        guard method.sendsCode else { return nil }
        let customer = try CustomerStore.find(customerID, connection: connection)
        let value = method == .email ? customer?.email : customer?.phoneNumber
        guard let value, !value.isEmpty else {
            throw StepUpError.methodNotAllowed("no \(method == .email ? "e-mail address" : "phone number") on file")
        }
        return value
    }

    /// At most `maxSendsPerHour` messages with a code per token in any hour, new codes and
    /// re-sent ones (``recordResend(of:tokenReference:now:connection:)``) together; call it under
    /// the token's lock.
    ///
    /// - Throws: 429 `rate_limited` with the seconds until a send is allowed again.
    func enforceSendLimit(_ tokenReference: String, now: Date, connection: PostgresConnection) throws {
        let windowStart = now.addingTimeInterval(-3600)
        let rows = try connection.query(
            """
            SELECT count(*)::bigint AS n, min(at) AS oldest FROM (
                SELECT created_at AS at FROM challenges
                WHERE token_reference = \(tokenReference) AND method <> 'app' AND created_at > \(windowStart)
                UNION ALL
                SELECT at FROM challenge_resends WHERE token_reference = \(tokenReference) AND at > \(windowStart)
            ) sends
            """)
        guard let row = rows.first, try row.decode("n", as: Int64.self) >= settings.maxSendsPerHour else { return }
        let oldest = try row.decode("oldest", as: Date?.self) ?? now
        throw APIErrors.rateLimited(
            retryAfter: Int(oldest.addingTimeInterval(3600).timeIntervalSince(now).rounded(.up)),
            message: "too many requests; try again later")
    }

    /// At most `maxSendsPerCardholderPerHour` messages with a code in any hour to one customer, and
    /// to one destination (by ``PANVault/destinationFingerprint(_:)``, whoever's it is), across
    /// tokens and methods, new codes and re-sent ones together; on top of the per-token limit.
    /// Transaction-level advisory locks on the customer and on the destination, taken in that
    /// order after the token's lock, serialise the count with concurrent sends to either.
    ///
    /// - Throws: 429 `rate_limited` with the seconds until a send is allowed again.
    func enforceCardholderLimit(
        customerID: String, destinationFingerprint: [UInt8]?, now: Date, connection: PostgresConnection
    ) throws {
        let windowStart = now.addingTimeInterval(-3600)
        // A re-send happens while its code is pending, and no code lives longer than an hour.
        let challengesSince = windowStart.addingTimeInterval(-3600)
        try connection.execute("SELECT pg_advisory_xact_lock(hashtextextended(\("otp-customer:" + customerID), 0))")
        var counts: [PostgresQuery] = [
            """
            SELECT count(*)::bigint AS n, min(at) AS oldest FROM (
                SELECT created_at AS at FROM challenges
                WHERE customer_id = \(customerID) AND method <> 'app' AND created_at > \(windowStart)
                UNION ALL
                SELECT r.at FROM challenges c JOIN challenge_resends r ON r.challenge_id = c.challenge_id
                WHERE c.customer_id = \(customerID) AND c.created_at > \(challengesSince) AND r.at > \(windowStart)
            ) sends
            """
        ]
        if let destinationFingerprint {
            let lockKey = "otp-destination:" + BinaryEncoding.hexString(destinationFingerprint)
            try connection.execute("SELECT pg_advisory_xact_lock(hashtextextended(\(lockKey), 0))")
            counts.append(
                """
                SELECT count(*)::bigint AS n, min(at) AS oldest FROM (
                    SELECT created_at AS at FROM challenges
                    WHERE destination_fingerprint = \(destinationFingerprint) AND created_at > \(windowStart)
                    UNION ALL
                    SELECT r.at FROM challenges c JOIN challenge_resends r ON r.challenge_id = c.challenge_id
                    WHERE c.destination_fingerprint = \(destinationFingerprint) AND c.created_at > \(challengesSince)
                      AND r.at > \(windowStart)
                ) sends
                """)
        }
        for count in counts {
            guard let row = try connection.query(count).first,
                try row.decode("n", as: Int64.self) >= settings.maxSendsPerCardholderPerHour
            else { continue }
            let oldest = try row.decode("oldest", as: Date?.self) ?? now
            throw APIErrors.rateLimited(
                retryAfter: Int(oldest.addingTimeInterval(3600).timeIntervalSince(now).rounded(.up)),
                message: "too many codes for this cardholder; try again later")
        }
    }

    /// Counts a pending code's message sent again against the send limit.
    func recordResend(of challengeID: UUID, tokenReference: String, now: Date, connection: PostgresConnection) throws {
        try connection.execute(
            """
            INSERT INTO challenge_resends (challenge_id, token_reference, at)
            VALUES (\(challengeID), \(tokenReference), \(now))
            """)
    }
}
