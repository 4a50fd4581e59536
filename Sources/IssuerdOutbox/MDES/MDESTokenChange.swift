import IssuerdMDES

/// Why issuerd changes a Mastercard token (`tokens.service = 'mdes'`), and the Customer Service
/// API call, reason code and comment that say so (MDES Customer Service API).
package enum MDESTokenChange: String, Sendable, CaseIterable, Codable {
    /// The card was reported lost: suspend, `L`.
    case cardLost = "card_lost"
    /// The card was reported stolen: suspend, `S`.
    case cardStolen = "card_stolen"
    /// The card was closed: delete everywhere (`DeleteFromConsumerApp` `"false"`), `C` (account closed).
    case cardClosed = "card_closed"
    /// A lost or stolen card is active again: unsuspend what the issuer suspended, `F` (found / not stolen).
    case cardReopened = "card_reopened"
    /// The cardholder entered the right one-time code (sent by text, e-mail or voice): activate, `A`.
    case codeVerified = "step_up_verified"
    /// The code was checked by the issuer's call centre (its IVR, an `ivr` API key): activate, `C`.
    case callCentreVerified = "call_centre_verified"
    /// The cardholder verified in the issuer's app (In-App Verification): activate, `A`.
    case inAppVerified = "in_app_verification"
    /// The card was reissued because these tokens were used for fraud: delete everywhere, `T`.
    case reissueTokenFraud = "reissue_token_fraud"
    /// The card was reissued before the token was activated: delete everywhere, `Z`.
    case reissueUnactivated = "reissue_unactivated"
    /// A lost or stolen card was reissued and the token moved to the new card: the device was not
    /// lost, so the issuer lifts its own suspension, `F`.
    case reissueResumed = "reissue_resumed"

    /// The Customer Service API operation.
    package var operation: CustomerServiceOperation {
        switch self {
        case .cardLost, .cardStolen: .suspend
        case .cardClosed, .reissueTokenFraud, .reissueUnactivated: .delete
        case .cardReopened, .reissueResumed: .unsuspend
        case .codeVerified, .callCentreVerified, .inAppVerified: .activate
        }
    }

    /// Mastercard's one-character `ReasonCode` for this change.
    package var reasonCode: Character {
        switch self {
        case .cardLost: "L"
        case .cardStolen: "S"
        case .cardClosed: "C"
        case .cardReopened, .reissueResumed: "F"
        case .reissueTokenFraud: "T"
        case .reissueUnactivated: "Z"
        case .codeVerified, .inAppVerified: "A"
        case .callCentreVerified: "C"
        }
    }

    /// `CommentText`, what Mastercard's customer service reads about the call.
    package var commentText: String {
        switch self {
        case .cardLost: "Card reported lost to the issuer"
        case .cardStolen: "Card reported stolen to the issuer"
        case .cardClosed: "Card account closed by the issuer"
        case .cardReopened: "Card active again; the issuer lifts its own suspension"
        case .codeVerified: "Cardholder verified with a one-time activation code"
        case .callCentreVerified: "Cardholder verified through the issuer's call centre"
        case .inAppVerified: "Cardholder verified in the issuer's mobile app"
        case .reissueTokenFraud: "Card reissued after fraud with this token"
        case .reissueUnactivated: "Card reissued before the token was activated"
        case .reissueResumed: "Card reissued after loss or theft; the token moved and the device was not lost"
        }
    }
}
