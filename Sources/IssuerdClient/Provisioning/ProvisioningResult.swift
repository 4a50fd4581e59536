/// The answer to ``IssuerdClient/provisioningData(cardId:certificates:nonce:nonceSignature:scheme:channel:device:)``.
///
/// A decline is an expected outcome of issuer risk, not an error: the app ends PassKit's flow
/// with an empty `PKAddPaymentPassRequest` and tells the user to contact the issuer.
public enum ProvisioningResult: Sendable, Equatable {
    /// Green or yellow: the pass data PassKit needs. Yellow still gets its payload; the card
    /// network then asks for step-up before the token activates.
    case approved(ApprovedPassData)
    /// Orange (403 `provisioning_declined`): the attempt id to quote to support and the rules
    /// that refused it.
    case declined(attemptId: String, reasons: [Reason])

    /// The pass data, when approved.
    public var approved: ApprovedPassData? {
        if case .approved(let data) = self { return data }
        return nil
    }

    /// The attempt id of either outcome.
    public var attemptId: String {
        switch self {
        case .approved(let data): data.attemptId
        case .declined(let attemptId, _): attemptId
        }
    }
}
