// Compiled only on iOS, iPadOS and Mac Catalyst (`os(iOS)`): the add-payment-pass UI and
// In-App Verification activation exist only there, and a macOS build of this package (server
// developers on a Mac) must not trip over them. Linux never sees this file.
//
// Written against the public PassKit API (iOS 16 SDK surface); it cannot be compiled in this
// repository's Linux CI, so an Xcode build of the app is its first compiler.
#if canImport(PassKit) && os(iOS)
import Foundation
import PassKit

/// PassKit glue for the issuer app: the add-card configuration, the "Add to Apple Wallet"
/// button rule, finding the pass of a Wallet deep link, and activating it.
///
/// Compiled only on Apple platforms with PassKit's add-payment-pass UI (iOS, iPadOS, Mac
/// Catalyst); see docs/ios-integration.md for the whole flow.
public enum IssuerdPassKit {
    /// The configuration `PKAddPaymentPassViewController` starts from.
    ///
    /// Display data only: PassKit shows the name or suffix and description, and uses
    /// `primaryAccountIdentifier` to target the device that lacks the pass.
    ///
    /// - Parameters:
    ///   - card: A card from ``IssuerdClient/cards()``.
    ///   - scheme: The encryption scheme to ask PassKit for; pass the same one to
    ///     ``IssuerdClient/provisioningData(cardId:certificates:nonce:nonceSignature:scheme:channel:device:)``.
    /// - Returns: `nil` when PassKit refuses the scheme on this device.
    public static func configuration(
        for card: CardSummary, scheme: EncryptionScheme = .eccV2
    ) -> PKAddPaymentPassRequestConfiguration? {
        guard let configuration = PKAddPaymentPassRequestConfiguration(encryptionScheme: scheme.passKitScheme) else {
            return nil
        }
        configuration.style = .payment
        configuration.cardholderName = card.cardholderName
        configuration.primaryAccountSuffix = card.primaryAccountSuffix
        configuration.localizedDescription = card.localizedDescription
        configuration.primaryAccountIdentifier = card.primaryAccountIdentifier
        // An unknown network stays nil: PassKit then lets the device decide, rather than
        // failing on a wrong guess.
        configuration.paymentNetwork = card.network?.passKitNetwork
        return configuration
    }

    /// Whether to show "Add to Apple Wallet" for a card.
    ///
    /// Apple's rule: hide the button when the pass is already on this iPhone or its paired
    /// Apple Watch; `canAddSecureElementPass` answers for devices that still lack it.
    ///
    /// - Parameters:
    ///   - card: A card from ``IssuerdClient/cards()``.
    ///   - library: The pass library (injectable for previews).
    /// - Returns: `false` for an ineligible card, a device that cannot add payment passes, or a
    ///   card already in Wallet everywhere it can go.
    @MainActor
    public static func shouldShowAddButton(for card: CardSummary, library: PKPassLibrary = PKPassLibrary()) -> Bool {
        guard card.walletEligible, PKAddPaymentPassViewController.canAddPaymentPass() else { return false }
        let identifier = card.primaryAccountIdentifier
        let present =
            library.passes(of: .secureElement).compactMap(\.secureElementPass) + library.remoteSecureElementPasses
        if present.contains(where: { $0.primaryAccountIdentifier == identifier }) { return false }
        return library.canAddSecureElementPass(primaryAccountIdentifier: identifier)
    }

    /// The pass a Wallet deep link names, on this device or its paired watch.
    ///
    /// - Parameters:
    ///   - link: The parsed launch URL.
    ///   - library: The pass library.
    /// - Returns: `nil` when neither device holds the pass (e.g. it was removed meanwhile).
    @MainActor
    public static func pass(for link: WalletDeepLink, library: PKPassLibrary = PKPassLibrary()) -> PKSecureElementPass?
    {
        if let local = library.pass(withPassTypeIdentifier: link.passTypeIdentifier, serialNumber: link.serialNumber)?
            .secureElementPass
        {
            return local
        }
        return library.remoteSecureElementPasses.first {
            $0.passTypeIdentifier == link.passTypeIdentifier && $0.serialNumber == link.serialNumber
        }
    }

    /// Activates a pass with the activation data from ``IssuerdClient/verify(link:)``
    /// (In-App Verification method A, the one Apple recommends).
    ///
    /// - Parameters:
    ///   - pass: The pass, e.g. from ``pass(for:library:)``.
    ///   - activationData: The bytes ``IssuerdClient/verify(link:)`` returned, as they are.
    ///   - library: The pass library.
    /// - Throws: PassKit's error, or ``PassActivationError`` when PassKit reports failure
    ///   without one.
    @MainActor
    public static func activate(
        pass: PKSecureElementPass, activationData: Data, library: PKPassLibrary = PKPassLibrary()
    ) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            // @Sendable: PassKit may call back off the main thread, and a closure inheriting
            // @MainActor would trap there under Swift 6's dynamic isolation checks.
            library.activate(pass, activationData: activationData) { @Sendable success, error in
                if success {
                    continuation.resume()
                } else {
                    continuation.resume(throwing: error ?? PassActivationError())
                }
            }
        }
    }
}

/// PassKit declined to activate a pass without saying why.
public struct PassActivationError: Error, CustomStringConvertible {
    /// Creates the error.
    public init() {}

    public var description: String { "PassKit did not activate the pass" }
}
#endif
