import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdHTTP
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// The providers the settings build, and the answers without them.
@Suite("Google Pay opaque card providers")
struct OpaqueCardProviderTests {
    struct StubVisa: OpaqueCardProvider {
        let network = "visa"
        func opaquePaymentCard(_ card: PushedCard, to wallet: PushWallet, now: Date) throws -> String {
            "stub-\(card.cardID)"
        }
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
        "Without providers: Visa and Mastercard are 422 not configured, other networks unsupported; a plugged-in provider serves"
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

    @Test(
        "Visa's settings: all three build the Visa provider; one alone, a secret file readable by others, or an empty one stop start-up"
    )
    func visaSettings() throws {
        let directory = try TestScratch.directory("issuerd-visa-settings")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let secret = directory.appendingPathComponent("secret")
        try "s3cret\n".write(to: secret, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: secret.path)
        let all = [
            "ISSUERD_VISA_ENCRYPTION_API_KEY": "KEY-1", "ISSUERD_VISA_ENCRYPTION_SHARED_SECRET": secret.path,
            "ISSUERD_VISA_CLIENT_APP_ID": "com.example.bank",
        ]
        let settings = try GooglePaySettings(ConfigurationReader(all))
        guard case .file(let read) = settings.visa?.sharedSecret else {
            Issue.record("the secret's file was not read")
            return
        }
        #expect(read.unsafeValue == Array("s3cret".utf8))
        #expect("\(read)" == "****")
        #expect(try GooglePayCrypto(settings: settings, tav: nil).provider(network: "visa").network == "visa")

        func refused(_ environment: [String: String]) -> String? {
            do {
                _ = try GooglePaySettings(ConfigurationReader(environment))
                return nil
            } catch let error as ConfigurationError {
                return error.key
            } catch {
                return "\(error)"
            }
        }
        #expect(
            refused(["ISSUERD_VISA_ENCRYPTION_API_KEY": "KEY-1"]) == "ISSUERD_VISA_ENCRYPTION_SHARED_SECRET")
        try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: secret.path)
        #expect(refused(all) == "ISSUERD_VISA_ENCRYPTION_SHARED_SECRET")
        try "\n".write(to: secret, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: secret.path)
        #expect(refused(all) == "ISSUERD_VISA_ENCRYPTION_SHARED_SECRET")
        var missingFile = all
        missingFile["ISSUERD_VISA_ENCRYPTION_SHARED_SECRET"] = directory.appendingPathComponent("none").path
        #expect(refused(missingFile) == "ISSUERD_VISA_ENCRYPTION_SHARED_SECRET")
    }
}
