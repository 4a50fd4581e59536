// Compiled only on iOS, iPadOS and Mac Catalyst; see IssuerdPassKit.swift.
#if canImport(PassKit) && os(iOS)
import Foundation
import PassKit

extension ApprovedPassData {
    /// The request to hand the completion handler of
    /// `addPaymentPassViewController(_:generateRequestWithCertificateChain:nonce:nonceSignature:completionHandler:)`.
    public func paymentPassRequest() -> PKAddPaymentPassRequest {
        let request = PKAddPaymentPassRequest()
        request.encryptedPassData = encryptedPassData
        // The bytes as issuerd decoded them: PassKit base64-encodes them on the way to the network.
        request.activationData = activationData
        request.ephemeralPublicKey = ephemeralPublicKey
        request.wrappedKey = wrappedKey
        return request
    }
}

extension ProvisioningResult {
    /// The request to hand PassKit: the pass data when approved; on decline an empty request,
    /// which ends PassKit's flow (it then calls `didFinishAdding` with an error).
    public func paymentPassRequest() -> PKAddPaymentPassRequest {
        approved?.paymentPassRequest() ?? PKAddPaymentPassRequest()
    }
}

extension EncryptionScheme {
    /// PassKit's name for the scheme.
    public var passKitScheme: PKEncryptionScheme {
        switch self {
        case .eccV2: .ECC_V2
        case .rsaV2: .RSA_V2
        }
    }
}

extension PaymentNetwork {
    /// PassKit's constant for the network.
    public var passKitNetwork: PKPaymentNetwork {
        switch self {
        case .visa: .visa
        case .mastercard: .masterCard
        case .amex: .amex
        case .discover: .discover
        case .jcb: .JCB
        case .unionPay: .chinaUnionPay
        case .maestro: .maestro
        case .interac: .interac
        case .eftpos: .eftpos
        }
    }
}
#endif
