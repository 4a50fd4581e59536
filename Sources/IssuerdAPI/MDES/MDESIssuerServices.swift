import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdHTTP
import IssuerdMDES
import IssuerdOutbox
import IssuerdPostgres
import IssuerdStorage

/// `POST /mdes/issuerServices/1/0/{op}`: the gate, the bounded body, the stored answer of a
/// repeated `requestId`, and the operation's flow, in one transaction.
///
/// - **Gate**: only a request from a trusted proxy carrying `X-Client-Verify: SUCCESS` (the
///   proxy verified MDES's client certificate) is read; any other is 403 on its head and
///   nothing is recorded (``admit(_:)``, also the route's admission).
/// - **Retries**: the answer is stored with the operation's changes, keyed by operation and
///   `requestId` with the body's SHA-256 (`mdes_requests`); the same body again gets the same
///   bytes, another body under that `requestId` an `ErrorsResponse` (`DUPLICATE_REQUEST_ID`).
///   A transaction-level advisory lock on the pair serialises concurrent retries.
/// - **Errors**: a request issuerd cannot process is an `ErrorsResponse` (400; 503 when the
///   database is unavailable), never stored, so a retry is processed anew; a payload that does
///   not open is `CRYPTOGRAPHY_ERROR`, logged with the failed step and never its bytes.
struct MDESIssuerServices: Sendable {
    let context: ServiceContext
    let settings: MDESSettings
    /// The issuer keys (``ServiceContext/mdesIssuerKeys``).
    let keys: MDESIssuerKeyRing
    let risk: RiskService
    let challenges: ChallengeIssuer
    let verifier: ChallengeVerifier
    let stepUpMetrics: StepUpMetrics
    let sealer: OutboxSealer
    /// Account updates for tokens no reissue moved (`FUNDING_ACCOUNT_UPDATE`, `REDIGITIZATION_COMPLETE`).
    let unrequestedAccountUpdates: Counter
    /// The route table's: a database failure every MDES call meets is one warning per interval.
    let repeatedLogs: RepeatedLogLimiter

    init(context: ServiceContext, settings: MDESSettings, keys: MDESIssuerKeyRing, repeatedLogs: RepeatedLogLimiter) {
        self.context = context
        self.settings = settings
        self.keys = keys
        self.repeatedLogs = repeatedLogs
        risk = RiskService(context: context)
        stepUpMetrics = StepUpMetrics(context.metrics)
        sealer = OutboxSealer(keyRing: context.vault.keyRing)
        challenges = ChallengeIssuer(
            database: context.database, vault: context.vault, sealer: sealer,
            settings: context.configuration.stepUp, metrics: stepUpMetrics)
        verifier = ChallengeVerifier(database: context.database, vault: context.vault, metrics: stepUpMetrics)
        unrequestedAccountUpdates = context.unrequestedAccountUpdates
    }

    /// How long a stored answer is kept for MDES's retries (30 days: far beyond any retry).
    static let answerRetention: TimeInterval = 30 * 86_400

    /// The largest body read: an `encryptedData` of the schema's 256 KiB and the rest.
    static let bodyLimit = 300 * 1024

    /// The gate, on the request's head.
    ///
    /// A proxy that appends its verdict to a client's own `X-Client-Verify` instead of replacing it
    /// would pass the client's `SUCCESS` along; so exactly one field, and that `SUCCESS`, is believed.
    ///
    /// - Throws: 403 `forbidden` unless the peer is a trusted proxy and carries exactly one
    ///   `X-Client-Verify`, `SUCCESS`.
    static func admit(_ request: HTTPRequest, proxies: TrustedProxies) throws {
        guard proxies.contains(request.remoteAddress), request.headers.values(for: "X-Client-Verify") == ["SUCCESS"]
        else {
            throw HTTPError.forbidden("MDES calls are accepted only through the mutual-TLS proxy")
        }
    }

    /// An operation's outcome: the answer's status and body.
    struct Answer {
        var status: Int
        var body: [UInt8]

        static func ok<T: Encodable>(_ value: T) -> Answer {
            Answer(status: 200, body: Array(MDESMessageDecoder.encode(value)))
        }
    }

    func handle(_ request: HTTPRequest) throws -> HTTPResponse {
        try Self.admit(request, proxies: settings.trustedProxies)
        guard let operation = request.pathParameters["op"].flatMap(MDESOperation.init(rawValue:)) else {
            throw HTTPError.notFound("no such MDES operation")
        }
        var responseId = MDESResponseID.responseId(forUnread: request.requestId)
        do {
            guard request.body.count <= Self.bodyLimit else {
                throw MDESRequestError("REQUEST_TOO_LARGE", "the body exceeds \(Self.bodyLimit) bytes")
            }
            let body = Data(request.body)
            // Authorize Service decoded once, in one pass over the bytes (Foundation's decoder where
            // that reading declines): a body that does not decode or validate here is answered by
            // the general path below, with its errors in their order.
            if operation == .authorizeService,
                let authorize = MDESAuthorizeServiceRequest(jsonBytes: request.body)
                    ?? (try? MDESMessageDecoder.decode(MDESAuthorizeServiceRequest.self, from: body)),
                (try? authorize.validate()) != nil
            {
                responseId = MDESResponseID.responseId(for: authorize.requestId)
                if let answer = try authorizeInTwoRoundTrips(authorize, body: body, logger: request.logger) {
                    return HTTPResponse(
                        status: answer.status, headers: ["Content-Type": "application/json"], body: answer.body)
                }
            }
            let head = try MDESMessageDecoder.decode(MDESRequestHead.self, from: body)
            guard let requestId = head.requestId else {
                throw MDESRequestError.invalidField("requestId", "is required")
            }
            try MDESField.check(requestId, "requestId", 1...64)
            responseId = MDESResponseID.responseId(for: requestId)
            let answer = try exchange(operation, requestId: requestId, body: body, logger: request.logger)
            return HTTPResponse(status: answer.status, headers: ["Content-Type": "application/json"], body: answer.body)
        } catch let error as MDESRequestError {
            request.logger.notice(
                "MDES request refused",
                [
                    "operation": .string(operation.rawValue), "errorCode": .string(error.errorCode),
                    "problem": .string(error.description),
                ])
            return Self.errors(responseId: responseId, error, status: 400)
        } catch let error as PostgresError where error.isRejectedValue {
            // A value PostgreSQL cannot hold that slipped past the bounds: still the caller's.
            request.logger.notice("MDES value refused by the database", ["sqlState": .string(error.sqlState ?? "none")])
            return Self.errors(
                responseId: responseId, .invalidField("a value", "is malformed or too long"), status: 400)
        } catch let error as PostgresError {
            repeatedLogs.warning(
                request.logger, kind: "MDES database: \(error.code) \(error.sqlState ?? "")",
                "MDES request not processed: database",
                ["error": "\(error.code)", "sqlState": .string(error.sqlState ?? "none")])
            return Self.errors(responseId: responseId, .unavailable, status: 503)
        }
    }

    static func errors(responseId: String, _ error: MDESRequestError, status: Int) -> HTTPResponse {
        HTTPResponse(
            status: status, headers: ["Content-Type": "application/json"],
            body: Array(MDESMessageDecoder.encode(MDESErrorsResponse(responseId: responseId, error: error))))
    }

    /// The stored answer of `(operation, requestId)`, or the operation's, stored with its changes.
    private func exchange(
        _ operation: MDESOperation, requestId: String, body: Data, logger: Logger
    ) throws -> Answer {
        let digest = SHA256.hash(Array(body))
        let now = context.now
        return try context.database.transaction { connection in
            if let stored = try MDESStore.lockAndFindAnswer(
                operation: operation.rawValue, requestId: requestId, connection: connection)
            {
                guard stored.bodySHA256 == digest else { throw MDESRequestError.requestIdReused }
                return Answer(status: stored.status, body: Array(stored.answer.utf8))
            }
            let flows = MDESFlows(services: self, connection: connection, now: now, logger: logger)
            let answer = try flows.run(operation, body: body, responseId: MDESResponseID.responseId(for: requestId))
            try MDESStore.storeAnswer(
                operation: operation.rawValue, requestId: requestId,
                .init(bodySHA256: digest, status: answer.status, answer: String(decoding: answer.body, as: UTF8.self)),
                now: now, keptSince: now.addingTimeInterval(-Self.answerRetention), connection: connection)
            return answer
        }
    }

    /// Authorize Service in two round trips, as the TSP authorization: the pair's lock, its stored
    /// answer, the plan settings and the context statement travel together, and the attempt, a
    /// token awaiting step-up and the answer kept for retries travel with `COMMIT`. The payload
    /// is opened before the transaction.
    ///
    /// - Returns: nil for a payload that does not open here: the general path
    ///   (``exchange(_:requestId:body:logger:)``) then answers it, a stored answer before a
    ///   payload that no longer opens.
    private func authorizeInTwoRoundTrips(
        _ request: MDESAuthorizeServiceRequest, body: Data, logger: Logger
    ) throws -> Answer? {
        let now = context.now
        // Silent: a payload that does not open is logged once, by the general path.
        guard let preparation = try? MDESFlows.prepareAuthorize(request, services: self, now: now, logger: .silent)
        else { return nil }
        let operation = MDESOperation.authorizeService.rawValue
        let digest = SHA256.hash(Array(body))
        let responseId = MDESResponseID.responseId(for: request.requestId)
        var opening = PostgresPipeline(
            PushContext.lockAndPlanSettings(key: MDESStore.lockKey(operation: operation, requestId: request.requestId)))
        let storedRead = opening.append(MDESStore.answerLookup(operation: operation, requestId: request.requestId))
        let contextRead = preparation.statement.map { opening.append($0) }
        let outcome: (answer: Answer, decided: MDESFlows.AuthorizeDecision?) = try context.database.withConnection {
            connection in
            try connection.pipelinedTransaction(opening: opening) { _, results in
                if let stored = try MDESStore.storedAnswer(in: results[storedRead]) {
                    guard stored.bodySHA256 == digest else { throw MDESRequestError.requestIdReused }
                    return ((Answer(status: stored.status, body: Array(stored.answer.utf8)), nil), [])
                }
                let decided = try MDESFlows.decideAuthorize(
                    request, preparation, found: try contextRead.map { try results[$0] }, services: self, now: now,
                    responseId: responseId)
                let storage = MDESStore.answerStorage(
                    operation: operation, requestId: request.requestId,
                    .init(
                        bodySHA256: digest, status: decided.answer.status,
                        answer: String(decoding: decided.answer.body, as: UTF8.self)),
                    now: now, keptSince: now.addingTimeInterval(-Self.answerRetention))
                return ((decided.answer, decided), decided.closing + storage)
            }
        }
        outcome.decided?.announce(services: self, logger: logger)
        return outcome.answer
    }

    /// Opens an `encryptedPayload` and decodes its plaintext; every failure is `CRYPTOGRAPHY_ERROR`
    /// (the step logged, never the bytes), and a plaintext of the wrong shape `INVALID_FIELD_VALUE`.
    func open<T: Decodable & ValidityStamped>(
        _ payload: EncryptedPayload, as type: T.Type, now: Date, logger: Logger
    ) throws -> T {
        do {
            // Decrypted, then parsed once: the validity is read from the decoded value.
            return try FieldLevelEncryption.open(payload, with: keys, now: now, as: type)
        } catch let error as FieldLevelEncryptionError {
            logger.notice("MDES payload did not open", ["problem": .string(error.description)])
            throw MDESRequestError(error.errorCode, "the encryptedPayload could not be decrypted or has expired")
        } catch let error as DecodingError {
            let described = MDESMessageDecoder.describe(error)
            throw MDESRequestError(described.errorCode, "encryptedPayload: " + described.description)
        }
    }
}
