import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdHTTP
import Testing

@testable import IssuerdAPI

/// The provider interface a Visa issuer plugs into, and the answers without one.
@Suite("Google Pay opaque card providers")
struct OpaqueCardProviderTests {
    struct StubVisa: OpaqueCardProvider {
        let network = "visa"
        func opaquePaymentCard(_ card: PushedCard, now: Date) throws -> String { "stub-\(card.cardID)" }
    }

    static func code(_ body: () throws -> Any) -> (Int, String)? {
        do {
            _ = try body()
            return nil
        } catch let error as HTTPError {
            return (error.status, error.code.rawValue)
        } catch {
            return nil
        }
    }

    @Test(
        "Without providers: Visa and Mastercard are 422 not configured, as other networks; a plugged-in Visa provider serves"
    )
    func providers() throws {
        let settings = try GooglePaySettings(ConfigurationReader([:]))
        let none = try GooglePayCrypto(settings: settings, tav: nil)
        #expect(Self.code { try none.provider(network: "visa") }! == (422, "visa_push_not_configured"))
        #expect(Self.code { try none.provider(network: "mastercard") }! == (422, "mastercard_push_not_configured"))
        #expect(Self.code { try none.provider(network: "amex") }! == (422, "push_network_unsupported"))
        #expect(none.googleSealer == nil)

        let plugged = try GooglePayCrypto(settings: settings, tav: nil, extra: [StubVisa()])
        #expect(try plugged.provider(network: "visa").network == "visa")
    }

    @Test("One OpenPGP key without the other, or a certificate that is not one, stops start-up naming the setting")
    func halfConfigured() throws {
        #expect(throws: ConfigurationError.self) {
            try GooglePaySettings(
                ConfigurationReader(["ISSUERD_GOOGLE_OPC_SIGNING_KEY": "-----BEGIN PGP PRIVATE KEY BLOCK-----"]))
        }
        let settings = try GooglePaySettings(
            ConfigurationReader([
                "ISSUERD_MDES_MASTERCARD_CERT": "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----"
            ]))
        let tav = try MastercardTAVProvider(signingKey: RSA.Signing.PrivateKey(bits: 2048))
        #expect(throws: ConfigurationError.self) { try GooglePayCrypto(settings: settings, tav: tav) }
    }
}
