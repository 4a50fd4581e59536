import Foundation
import IssuerdCore
import IssuerdOutbox
import Testing

@testable import IssuerdAPI

/// `ISSUERD_MDES_CSAPI_URL` and its companions: each missing or malformed one named at start-up.
@Suite("MDES Customer Service API settings")
struct CustomerServiceSettingsTests {
    static let complete: [String: String] = [
        "ISSUERD_MDES_CSAPI_URL": "https://api.mastercard.com/mdes/csapi/v2",
        "ISSUERD_MDES_CONSUMER_KEY": "abc!def", "ISSUERD_MDES_SIGNING_KEY": "-----BEGIN PRIVATE KEY-----\nx\n",
        "ISSUERD_MDES_AUDIT_USER_ID": "issuerd", "ISSUERD_MDES_AUDIT_USER_NAME": "automation",
        "ISSUERD_MDES_AUDIT_ORGANIZATION": "Test Bank",
    ]

    static func failingKey(_ settings: [String: String]) -> String? {
        do {
            _ = try MDESCustomerServiceSettings.read(ConfigurationReader(settings))
            return nil
        } catch let error as ConfigurationError {
            return error.key
        } catch {
            return "\(error)"
        }
    }

    @Test("Unset URL: no settings, no calls; set: everything read")
    func readsOrNot() throws {
        #expect(try MDESCustomerServiceSettings.read(ConfigurationReader([:])) == nil)
        let settings = try #require(try MDESCustomerServiceSettings.read(ConfigurationReader(Self.complete)))
        #expect(settings.baseURL.absoluteString == "https://api.mastercard.com/mdes/csapi/v2")
        #expect(settings.consumerKey == "abc!def")
        #expect(settings.auditInfo.organization == "Test Bank")
        guard case .pem = settings.signingKey else {
            Issue.record("the PEM key was not taken")
            return
        }
    }

    @Test(
        arguments: [
            ("ISSUERD_MDES_CONSUMER_KEY", nil, "ISSUERD_MDES_CONSUMER_KEY"),
            ("ISSUERD_MDES_CONSUMER_KEY", "has \"quote\"", "ISSUERD_MDES_CONSUMER_KEY"),
            ("ISSUERD_MDES_SIGNING_KEY", nil, "ISSUERD_MDES_SIGNING_KEY"),
            ("ISSUERD_MDES_SIGNING_KEY", "/no/such/file.pem", "ISSUERD_MDES_SIGNING_KEY"),
            ("ISSUERD_MDES_SIGNING_KEY_LABEL", "csapi-key", "ISSUERD_MDES_SIGNING_KEY_LABEL"),
            ("ISSUERD_MDES_AUDIT_USER_ID", nil, "ISSUERD_MDES_AUDIT_USER_ID"),
            ("ISSUERD_MDES_AUDIT_USER_ID", "abc", "ISSUERD_MDES_AUDIT_USER_ID"),
            ("ISSUERD_MDES_AUDIT_USER_NAME", "ab", "ISSUERD_MDES_AUDIT_USER_NAME"),
            ("ISSUERD_MDES_AUDIT_ORGANIZATION", nil, "ISSUERD_MDES_AUDIT_ORGANIZATION"),
            ("ISSUERD_MDES_CSAPI_URL", "ftp://example.com/v2", "ISSUERD_MDES_CSAPI_URL"),
            ("ISSUERD_MDES_CSAPI_URL", "https://api.mastercard.com/mdes/csapi/v2?x=1", "ISSUERD_MDES_CSAPI_URL"),
        ] as [(String, String?, String)])
    func refused(key: String, value: String?, named: String) {
        var settings = Self.complete
        settings[key] = value
        #expect(Self.failingKey(settings) == named)
    }

    @Test("A key label needs an HSM; a PEM that is no RSA key stops serve naming the setting")
    func signingKeyAtStart() throws {
        var environment = Self.complete
        environment.removeValue(forKey: "ISSUERD_MDES_SIGNING_KEY")
        environment["ISSUERD_MDES_SIGNING_KEY_LABEL"] = "csapi-key"
        #expect {
            _ = try TestApplication(environment: environment)
        } throws: { ($0 as? ConfigurationError)?.key == "ISSUERD_MDES_SIGNING_KEY_LABEL" }
        #expect {
            _ = try TestApplication(environment: Self.complete)
        } throws: { ($0 as? ConfigurationError)?.key == "ISSUERD_MDES_SIGNING_KEY" }
    }
}
