import IssuerdCore
import IssuerdCrypto
import IssuerdHTTP
import IssuerdRisk
import IssuerdWire

/// A TSP authorization body that passed every bound, with the PAN parsed (masked by type from
/// here on) and the enumerations resolved.
struct TokenizationInput: Sendable {
    var body: TokenizationAuthorizeRequest
    var pan: PrimaryAccountNumber
    var expiration: CardExpiration
    var source: TokenizationSource?

    /// Validates a decoded body.
    ///
    /// - Throws: 400 `invalid_request` naming the field.
    init(_ body: TokenizationAuthorizeRequest) throws {
        try Self.identifier(body.requestId, field: "requestId", limit: 128)
        try Self.identifier(body.tokenReference, field: "tokenReference", limit: 128)
        if let requestor = body.tokenRequestorId {
            try Self.identifier(requestor, field: "tokenRequestorId", limit: 64)
        }
        guard let pan = PrimaryAccountNumber(body.card.accountNumber) else {
            throw APIErrors.invalidRequest(
                "card.accountNumber must be 12 to 19 digits passing the Luhn check", field: "card.accountNumber")
        }
        guard let expiration = CardExpiration(body.card.expiration) else {
            throw APIErrors.invalidRequest("card.expiration must be MM/YY", field: "card.expiration")
        }
        if let text = body.tokenizationSource {
            guard let source = TokenizationSource(name: text) else {
                throw APIErrors.invalidRequest(
                    "tokenizationSource must be manual, camera, push or on_file", field: "tokenizationSource")
            }
            self.source = source
        } else {
            source = nil
        }
        if let device = body.device { try ProvisioningInput.check(device) }
        if let wallet = body.wallet {
            for (name, score) in [
                ("deviceScore", wallet.deviceScore), ("accountScore", wallet.accountScore),
                ("phoneNumberScore", wallet.phoneNumberScore),
            ] {
                if let score, !(1...5).contains(score) {
                    throw APIErrors.invalidRequest("wallet.\(name) must be 1 to 5", field: "wallet.\(name)")
                }
            }
            if let score = wallet.tokenRiskScore, !(1...99).contains(score) {
                throw APIErrors.invalidRequest("wallet.tokenRiskScore must be 1 to 99", field: "wallet.tokenRiskScore")
            }
            if let recommendation = wallet.recommendedDecision, RiskInputBuilder.recommendation(recommendation) == nil {
                throw APIErrors.invalidRequest(
                    "wallet.recommendedDecision must be APPROVED, REQUIRE_ADDITIONAL_AUTHENTICATION or DECLINED",
                    field: "wallet.recommendedDecision")
            }
            if let codes = wallet.reasonCodes,
                codes.count > 32 || codes.contains(where: { !(1...64).contains($0.utf8.count) })
            {
                throw APIErrors.invalidRequest(
                    "wallet.reasonCodes must hold at most 32 codes of 1 to 64 characters", field: "wallet.reasonCodes")
            }
        }
        if let count = body.activeTokenCount, !(0...10_000).contains(count) {
            throw APIErrors.invalidRequest("activeTokenCount must be 0 to 10000", field: "activeTokenCount")
        }
        self.body = body
        self.pan = pan
        self.expiration = expiration
    }

    /// 1 to `limit` visible ASCII characters: ids are echoed into logs and keys.
    static func identifier(_ value: String, field: String, limit: Int) throws {
        guard (1...limit).contains(value.utf8.count), value.utf8.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E }) else {
            throw APIErrors.invalidRequest("\(field) must be 1 to \(limit) visible ASCII characters", field: field)
        }
    }
}
