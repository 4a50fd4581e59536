import Foundation
import IssuerdHTTP
import IssuerdWire

/// `POST /v1/cards/{cardId}/google-pay/activations`: Google Wallet's app-to-app yellow path
/// (Google Pay's "App-to-App ID&V"). Google Wallet opened the issuer's app with the registered action and an
/// `EXTRA_TEXT` payload; the app authenticated the cardholder and calls this. The pending token is
/// activated through In-App Verification's own function (``WalletVerifier``: the same single use,
/// hourly limit, audit entry and queued TSP activation), and the answer says what the app returns
/// to the wallet.
struct GooglePayActivation: Sendable {
    let verifier: WalletVerifier

    /// The longest `extraText` accepted.
    static let maximumExtraTextLength = 4096

    func activate(
        _ body: GooglePayActivationRequest, customerID: String, cardID: String, now: Date
    ) throws -> GooglePayActivationResponse {
        let tokenReference = try Self.tokenReference(body)
        do {
            let verified = try verifier.verify(
                WalletVerificationRequest(tokenReference: tokenReference), customerID: customerID, cardID: cardID,
                route: .googleAppToApp, now: now)
            return GooglePayActivationResponse(result: "approved", tokenReference: verified.tokenReference)
        } catch let error as HTTPError where error.code == "token_not_found" {
            return GooglePayActivationResponse(result: "declined", tokenReference: nil, reason: "token_not_found")
        } catch let error as HTTPError where error.code == "activation_method_not_allowed" {
            return GooglePayActivationResponse(
                result: "declined", tokenReference: tokenReference, reason: "app_not_offered")
        } catch let error as HTTPError where error.code == "invalid_state" {
            return GooglePayActivationResponse(
                result: "declined", tokenReference: tokenReference, reason: "not_awaiting_verification")
        }
    }

    /// The token reference: given, or read from `EXTRA_TEXT` (Base64 of JSON holding
    /// `tokenUniqueReference`, Mastercard's name; `tokenReference` also read). Which other
    /// fields MDES puts there is unverified (docs/networks.md, open point 7); nothing else is read.
    static func tokenReference(_ body: GooglePayActivationRequest) throws -> String {
        if body.tokenReference != nil, body.extraText != nil {
            throw APIErrors.invalidRequest("give tokenReference or extraText, not both")
        }
        if let reference = body.tokenReference {
            guard (1...128).contains(reference.utf8.count) else {
                throw APIErrors.invalidRequest("tokenReference must be 1 to 128 bytes", field: "tokenReference")
            }
            return reference
        }
        guard let text = body.extraText else {
            throw APIErrors.invalidRequest("give tokenReference or extraText")
        }
        guard (1...maximumExtraTextLength).contains(text.utf8.count),
            let bytes = base64(text), let payload = try? JSONDecoder().decode(ExtraText.self, from: bytes),
            let reference = payload.tokenUniqueReference ?? payload.tokenReference,
            (1...128).contains(reference.utf8.count)
        else {
            throw APIErrors.invalidRequest(
                "extraText must be Base64 of a JSON object holding tokenUniqueReference", field: "extraText")
        }
        return reference
    }

    /// Standard or URL-safe Base64, padded or not.
    private static func base64(_ text: String) -> Data? {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        standard += String(repeating: "=", count: (4 - standard.utf8.count % 4) % 4)
        return Data(base64Encoded: standard)
    }

    private struct ExtraText: Decodable {
        var tokenUniqueReference: String?
        var tokenReference: String?
    }
}
