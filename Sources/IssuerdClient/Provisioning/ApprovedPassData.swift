import Foundation

/// What PassKit's `PKAddPaymentPassRequest` needs, decoded from issuerd's base64.
///
/// `description` shows sizes only: the activation data is a one-time credential.
public struct ApprovedPassData: Sendable, Equatable, CustomStringConvertible {
    /// The encrypted pass payload (ciphertext and GCM tag).
    public let encryptedPassData: Data
    /// The network's activation data, exactly the bytes PassKit takes (not base64 again).
    public let activationData: Data
    /// ECC_V2: the 65-byte uncompressed ephemeral P-256 public key.
    public let ephemeralPublicKey: Data?
    /// RSA_V2: the wrapped AES key.
    public let wrappedKey: Data?
    /// Green, or yellow (step-up will follow at the card network).
    public let flow: DecisionFlow
    /// The issuer's attempt id, for support and the analyst console.
    public let attemptId: String
    /// The rules that contributed to the decision.
    public let reasons: [Reason]

    /// Creates approved pass data; the app normally receives it from ``IssuerdClient``.
    public init(
        encryptedPassData: Data, activationData: Data, ephemeralPublicKey: Data?, wrappedKey: Data?, flow: DecisionFlow,
        attemptId: String, reasons: [Reason]
    ) {
        self.encryptedPassData = encryptedPassData
        self.activationData = activationData
        self.ephemeralPublicKey = ephemeralPublicKey
        self.wrappedKey = wrappedKey
        self.flow = flow
        self.attemptId = attemptId
        self.reasons = reasons
    }

    /// Decodes and checks a 200 answer.
    ///
    /// PassKit refuses a request without `encryptedPassData`, without `activationData`, or
    /// (ECC_V2) without `ephemeralPublicKey`; such an answer is reported here as
    /// ``IssuerdClientError/Code/invalidResponse`` rather than as a silent PassKit failure.
    ///
    /// - Parameters:
    ///   - response: The wire answer.
    ///   - scheme: The scheme the request asked for.
    ///   - requestId: For the error.
    init(_ response: ProvisioningResponse, scheme: EncryptionScheme, requestId: String) throws(IssuerdClientError) {
        func bytes(_ field: String, _ base64: String?) throws(IssuerdClientError) -> Data? {
            guard let base64 else { return nil }
            guard let data = Data(base64Encoded: base64), !data.isEmpty else {
                throw .invalidResponse("\(field) is not non-empty base64", requestId: requestId)
            }
            return data
        }
        guard let encrypted = try bytes("encryptedPassData", response.encryptedPassData),
            let activation = try bytes("activationData", response.activationData)
        else { throw .invalidResponse("pass data missing", requestId: requestId) }
        let ephemeral = try bytes("ephemeralPublicKey", response.ephemeralPublicKey)
        let wrapped = try bytes("wrappedKey", response.wrappedKey)
        switch scheme {
        case .eccV2:
            // SEC 1 §2.3.3 uncompressed point: 0x04 ‖ X ‖ Y, 32 bytes each for P-256.
            guard let ephemeral, ephemeral.count == 65, ephemeral.first == 0x04 else {
                throw .invalidResponse("ECC_V2 answer without a 65-byte ephemeralPublicKey", requestId: requestId)
            }
        case .rsaV2:
            guard wrapped != nil else {
                throw .invalidResponse("RSA_V2 answer without wrappedKey", requestId: requestId)
            }
        }
        guard !response.decision.attemptId.isEmpty else {
            throw .invalidResponse("decision without an attemptId", requestId: requestId)
        }
        self.init(
            encryptedPassData: encrypted, activationData: activation, ephemeralPublicKey: ephemeral,
            wrappedKey: wrapped,
            flow: DecisionFlow(rawValue: response.decision.flow), attemptId: response.decision.attemptId,
            reasons: response.decision.reasons
        )
    }

    public var description: String {
        "ApprovedPassData(flow: \(flow), attemptId: \(attemptId), encryptedPassData: \(encryptedPassData.count) bytes, "
            + "activationData: \(activationData.count) bytes)"
    }
}
