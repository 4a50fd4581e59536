import Foundation
import IssuerdCore
import IssuerdKeys
import Testing

@testable import IssuerdAPI

/// `ISSUERD_PKCS11_*`: absent without a module (nothing else changes), validated eagerly with it.
@Suite("HSM settings")
struct HSMSettingsTests {
    static let module: [String: String] = [
        "ISSUERD_PKCS11_MODULE": "/usr/lib/softhsm/libsofthsm2.so", "ISSUERD_PKCS11_TOKEN_LABEL": "issuerd",
        "ISSUERD_PKCS11_PIN_FILE": "/run/credentials/issuerd/pin",
    ]

    @Test("No module: no HSM, and the master key stays required")
    func noModule() throws {
        let configuration = try IssuerdConfiguration(ConfigurationReader(ConfigurationTests.minimal))
        #expect(configuration.hsm == nil)
        var withoutKey = ConfigurationTests.minimal
        withoutKey["ISSUERD_MASTER_KEY"] = nil
        #expect(throws: ConfigurationError.self) { try IssuerdConfiguration(ConfigurationReader(withoutKey)) }
    }

    @Test("With a module: defaults, and the master key becomes optional")
    func defaults() throws {
        var values = ConfigurationTests.minimal.merging(Self.module) { _, new in new }
        values["ISSUERD_MASTER_KEY"] = nil
        values["ISSUERD_HTTP_THREADS"] = "12"
        let configuration = try IssuerdConfiguration(ConfigurationReader(values))
        let hsm = try #require(configuration.hsm)
        #expect(hsm.wrappingKeyLabel == "issuerd-pan-kek")
        #expect(hsm.tavKeyLabel == nil)
        #expect(hsm.sessionCount == 12)
        #expect(configuration.masterKeys.isEmpty)
    }

    @Test(
        "A wrong HSM setting names itself",
        arguments: [
            (["ISSUERD_PKCS11_MODULE": "libsofthsm2.so"], "ISSUERD_PKCS11_MODULE: must be the absolute path"),
            (["ISSUERD_PKCS11_TOKEN_LABEL": ""], "ISSUERD_PKCS11_TOKEN_LABEL: is required"),
            (["ISSUERD_PKCS11_PIN_FILE": ""], "ISSUERD_PKCS11_PIN_FILE: is required"),
            (
                ["ISSUERD_PKCS11_WRAP_KEY_LABEL": String(repeating: "k", count: 65)],
                "ISSUERD_PKCS11_WRAP_KEY_LABEL: must be 1 to 64"
            ),
            (["ISSUERD_PKCS11_SIGNING_KEY_LABEL": "tav\u{7}"], "ISSUERD_PKCS11_SIGNING_KEY_LABEL: must be 1 to 64"),
            (["ISSUERD_PKCS11_SESSIONS": "0"], "ISSUERD_PKCS11_SESSIONS: must be a whole number from 1 to 1024"),
            (
                ["ISSUERD_PKCS11_SIGNING_KEY_LABEL": "tav", "ISSUERD_TAV_SIGNING_KEY": "-----BEGIN PRIVATE KEY-----"],
                "ISSUERD_PKCS11_SIGNING_KEY_LABEL: set either it or"
            ),
            (
                ["ISSUERD_PKCS11_MODULE": "", "ISSUERD_PKCS11_TOKEN_LABEL": "x"],
                "ISSUERD_PKCS11_TOKEN_LABEL: is set but ISSUERD_PKCS11_MODULE is not"
            ),
            (
                ["ISSUERD_MASTER_KEY": "", "ISSUERD_MASTER_KEY_VERSION": "2"],
                "ISSUERD_MASTER_KEY_VERSION: is set but ISSUERD_MASTER_KEY is not"
            ),
        ] as [([String: String], String)])
    func invalid(changes: [String: String], message: String) {
        let values = ConfigurationTests.minimal.merging(Self.module) { _, new in new }.merging(changes) { _, new in new
        }
        do {
            _ = try IssuerdConfiguration(ConfigurationReader(values))
            Issue.record("expected: \(message)")
        } catch let error as ConfigurationError {
            #expect(error.description.hasPrefix(message), "\(error)")
            #expect(!error.description.contains("/run/credentials"))
        } catch {
            Issue.record("unexpected \(error)")
        }
    }
}
