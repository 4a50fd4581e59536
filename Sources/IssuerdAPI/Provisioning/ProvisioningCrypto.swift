import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdKeys

/// The crypto of in-app provisioning, built once from configuration: the Apple chain verifier
/// (with its cache), the ECC_V2 and RSA_V2 encryptors, and one activation-data provider per
/// card network.
struct ProvisioningCrypto: Sendable {
    let chainVerifier: AppleCertificateChainVerifier
    let eccV2: ECCV2Encryptor
    /// Present only when `ISSUERD_ENABLE_RSA_V2` is on (the scheme is unverified against Apple).
    let rsaV2: RSAV2Encryptor?
    /// Mastercard TAV when a signing key is configured (in the HSM or as PEM).
    let tav: MastercardTAVProvider?
    /// The issuer crypto-OTP (HMAC), for every other network and as the fallback.
    let issuerOTP: IssuerOTPProvider

    init(configuration: IssuerdConfiguration, vault: PANVault, hsm: HSMKeyStore? = nil, logger: Logger) throws {
        let trust: AppleTrustProfile
        switch configuration.appleTrust {
        case .production:
            trust = .production
        case .sandbox:
            throw ConfigurationError(
                key: "ISSUERD_APPLE_TRUST",
                problem:
                    "sandbox needs Apple's sandbox root, which Apple does not publish: give the path of its PEM instead"
            )
        case .custom(let path):
            guard let pem = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw ConfigurationError(key: "ISSUERD_APPLE_TRUST", problem: "cannot read \(path)")
            }
            do {
                trust = try .custom(rootPEM: pem)
            } catch {
                throw ConfigurationError(key: "ISSUERD_APPLE_TRUST", problem: "\(path) is not a PEM certificate")
            }
        }
        chainVerifier = try AppleCertificateChainVerifier(trust: trust, checkValidity: configuration.appleCheckValidity)
        eccV2 = ECCV2Encryptor()
        rsaV2 = configuration.enableRSAV2 ? try RSAV2Encryptor(enabled: true) : nil
        let validity = TimeInterval(configuration.activationValidity.components.seconds)
        if let signer = try hsm?.tavSigner() {
            tav = try MastercardTAVProvider(signer: signer, validity: validity)
        } else if let pem = configuration.tavSigningKeyPEM {
            do {
                tav = try MastercardTAVProvider(
                    signingKey: RSA.Signing.PrivateKey(pemRepresentation: pem.unsafeValue), validity: validity)
            } catch {
                throw ConfigurationError(
                    key: "ISSUERD_TAV_SIGNING_KEY", problem: "must be an RSA private key of at least 2048 bits in PEM")
            }
        } else {
            tav = nil
            logger.notice("no ISSUERD_TAV_SIGNING_KEY: Mastercard activation data uses the issuer crypto-OTP")
        }
        issuerOTP = try IssuerOTPProvider(key: vault.activationOTPKey(), validity: validity)
    }

    /// The activation-data provider for a card network (`mastercard`, `visa`, …).
    func activationProvider(network: String) -> any ActivationDataProvider {
        if network == "mastercard", let tav { return tav }
        return issuerOTP
    }
}
