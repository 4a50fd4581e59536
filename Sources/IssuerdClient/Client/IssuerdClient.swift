import Foundation
@_exported import IssuerdWire  // CardSummary, Reason, DeviceInfo are part of this API; one import for the app.

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The issuer app's client for issuerd: the card list, Apple Pay in-app provisioning and
/// In-App Verification from the Wallet deep link.
///
/// Every call has one overall time budget that covers fetching the bearer token, every attempt
/// and every back-off. The default (15 s) leaves PassKit's 20-second window room for the rest of
/// the add-card flow. Retries happen only where they cannot duplicate an effect: `GET`s, and
/// `POST`s that carry an `Idempotency-Key` generated once per call and reused on every retry.
public struct IssuerdClient: Sendable {
    /// The issuerd root, e.g. `https://issuer.example/`; a path prefix is kept.
    public let baseURL: URL
    /// The overall budget of one call, across retries.
    public let timeBudget: Duration
    /// When and how often a failed attempt is tried again.
    public let retryPolicy: RetryPolicy

    /// The session every attempt goes through.
    let session: URLSession
    /// Returns the app user's bearer token.
    let tokenProvider: @Sendable () async throws -> String

    /// PassKit ends the add-card sheet 20 s after handing over the certificates; 15 s keeps the
    /// app clear of that edge even after the token fetch and UI work.
    public static let defaultTimeBudget: Duration = .seconds(15)

    /// Creates a client.
    ///
    /// - Parameters:
    ///   - baseURL: The issuerd root URL; a path prefix (reverse proxy) is kept.
    ///   - session: The session to send requests with (inject one with your own configuration
    ///     or certificate pinning delegate).
    ///   - timeBudget: The overall budget of one call, across retries.
    ///   - retryPolicy: When and how often a failed attempt is tried again.
    ///   - tokenProvider: Returns the app user's bearer token; called once per call, within
    ///     the time budget. Its errors are rethrown unchanged.
    public init(
        baseURL: URL,
        session: URLSession = .shared,
        timeBudget: Duration = IssuerdClient.defaultTimeBudget,
        retryPolicy: RetryPolicy = RetryPolicy(),
        tokenProvider: @escaping @Sendable () async throws -> String
    ) {
        self.baseURL = baseURL
        self.session = session
        self.timeBudget = timeBudget
        self.retryPolicy = retryPolicy
        self.tokenProvider = tokenProvider
    }

    /// The cards of the signed-in customer, with what `PKAddPaymentPassRequestConfiguration`
    /// needs (`GET /v1/cards`).
    ///
    /// - Returns: The cards, in the server's order.
    /// - Throws: ``IssuerdClientError``, or the token provider's own error.
    public func cards() async throws -> [CardSummary] {
        let reply = try await send(HTTPCall(method: .get, path: "/v1/cards"))
        guard reply.isSuccess else { throw ResponseMapping.error(for: reply) }
        return try ResponseMapping.decode(CardList.self, from: reply).cards
    }

    /// Asks issuerd for the encrypted pass data PassKit needs
    /// (`POST /v1/cards/{cardId}/apple-pay/provision`).
    ///
    /// Call it from `addPaymentPassViewController(_:generateRequestWithCertificateChain:nonce:nonceSignature:completionHandler:)`
    /// with the values PassKit handed over; they travel base64-encoded.
    ///
    /// - Parameters:
    ///   - cardId: The card, as listed by ``cards()``.
    ///   - certificates: PassKit's DER certificates, leaf first.
    ///   - nonce: PassKit's nonce.
    ///   - nonceSignature: PassKit's nonce signature.
    ///   - scheme: The encryption scheme the configuration asked for.
    ///   - channel: In-app button or Wallet Extension.
    ///   - device: What the app knows about the device, for risk scoring.
    /// - Returns: ``ProvisioningResult/approved(_:)`` with the pass data, or
    ///   ``ProvisioningResult/declined(attemptId:reasons:)`` when issuer risk refuses the card.
    /// - Throws: ``IssuerdClientError`` (for example ``IssuerdClientError/Code/invalidCertificateChain``),
    ///   or the token provider's own error.
    public func provisioningData(
        cardId: String,
        certificates: [Data],
        nonce: Data,
        nonceSignature: Data,
        scheme: EncryptionScheme = .eccV2,
        channel: ProvisioningChannel = .inApp,
        device: DeviceInfo? = nil
    ) async throws -> ProvisioningResult {
        let body = ProvisioningRequest(
            certificates: certificates.map { $0.base64EncodedString() },
            nonce: nonce.base64EncodedString(),
            nonceSignature: nonceSignature.base64EncodedString(),
            encryptionScheme: scheme.rawValue,
            channel: channel.rawValue,
            device: device
        )
        let path = "/v1/cards/\(try PathSegment.encode(cardId, name: "cardId"))/apple-pay/provision"
        let reply = try await send(try HTTPCall.post(path: path, json: body))
        if reply.isSuccess {
            let response = try ResponseMapping.decode(ProvisioningResponse.self, from: reply)
            return .approved(try ApprovedPassData(response, scheme: scheme, requestId: reply.requestId))
        }
        if let decline = ResponseMapping.decline(in: reply) { return decline }
        throw ResponseMapping.error(for: reply)
    }

    /// In-App Verification: asks issuerd to activate the token behind the pass Wallet opened the
    /// app for (`POST /v1/wallet/verifications`).
    ///
    /// Authenticate the user first; then hand the returned bytes to
    /// `PKPassLibrary.activate(_:activationData:completion:)`.
    ///
    /// - Parameter link: The launch URL Wallet opened, parsed.
    /// - Returns: The activation data bytes.
    /// - Throws: ``IssuerdClientError`` (``IssuerdClientError/Code/notFound`` for an unknown pass,
    ///   ``IssuerdClientError/Code/conflict`` when the token is not awaiting verification), or the
    ///   token provider's own error.
    public func verify(link: WalletDeepLink) async throws -> Data {
        let body = WalletVerificationRequest(
            serialNumber: link.serialNumber, passTypeIdentifier: link.passTypeIdentifier)
        let reply = try await send(try HTTPCall.post(path: "/v1/wallet/verifications", json: body))
        guard reply.isSuccess else { throw ResponseMapping.error(for: reply) }
        let response = try ResponseMapping.decode(WalletVerificationResponse.self, from: reply)
        guard let activationData = Data(base64Encoded: response.activationData), !activationData.isEmpty else {
            throw IssuerdClientError.invalidResponse("activationData is not base64", requestId: reply.requestId)
        }
        return activationData
    }
}
