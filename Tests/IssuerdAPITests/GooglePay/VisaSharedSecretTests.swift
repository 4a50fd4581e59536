import Foundation
import IssuerdCore
import IssuerdKeys
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// Where Visa's shared secret lives: a 0600 file (anything looser stops start-up with one line),
/// or its key-encryption key imported into an HSM (SoftHSM2), where every content key is then
/// wrapped; jwcrypto opens the payloads with SHA-256 of the secret either way.
@Suite("Visa's shared secret: a 0600 file or a key in the HSM")
struct VisaSharedSecretTests {
    /// A 0600 file holding ``VisaPushTests/secret`` and a newline, under `directory`.
    static func secretFile(in directory: URL, mode: Int = 0o600) throws -> String {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent("visa-shared-secret")
        try "\(VisaPushTests.secret)\n".write(to: file, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: file.path)
        return file.path
    }

    @Test(
        "A shared-secret file readable by group or others stops issuerd serve with one line naming it, exit status 78")
    func looseFileStopsStartUp() throws {
        let database = try TestDatabase.create()
        defer { database.drop() }
        let directory = try TestScratch.directory("issuerd-visa-serve")
        var environment = try ServeLifecycleTests.environment(database: database, directory: directory, port: 1)
        let file = try Self.secretFile(in: directory, mode: 0o644)
        environment["ISSUERD_VISA_ENCRYPTION_API_KEY"] = VisaPushTests.apiKey
        environment["ISSUERD_VISA_ENCRYPTION_SHARED_SECRET"] = file
        environment["ISSUERD_VISA_CLIENT_APP_ID"] = VisaPushTests.clientAppID
        let result = try CommandLineRunner.run(["serve"], environment: environment)
        #expect(result.status == 78)
        #expect(
            result.standardError.trimmingCharacters(in: .whitespacesAndNewlines)
                == "issuerd serve: ISSUERD_VISA_ENCRYPTION_SHARED_SECRET: \(file) is readable by its group or others (mode 644); a secret file must be mode 600 or 400"
        )
        #expect(!result.standardError.contains(VisaPushTests.secret))
    }

    @Test(
        "keys hsm import-visa-secret puts SHA-256 of the secret in the token; Google and Samsung pushes wrap there, jwcrypto opens them with SHA-256(secret) and not with a wrong one"
    )
    func pushesWrapInTheToken() throws {
        let (token, store) = try HSMKeyTests.initialisedToken()
        let file = try Self.secretFile(in: try TestScratch.directory("issuerd-visa-hsm"), mode: 0o640)
        var environment = HSMKeyTests.hsmEnvironment(token, tav: false)
        let loose = try CommandLineRunner.run(
            ["keys", "hsm", "import-visa-secret", "--secret-file", file], environment: environment)
        #expect(loose.status == 1 && loose.standardError.contains("must be mode 600 or 400"), "\(loose.standardError)")
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file)
        let imported = try CommandLineRunner.run(
            ["keys", "hsm", "import-visa-secret", "--secret-file", file], environment: environment)
        #expect(imported.status == 0, "\(imported.standardError)")
        #expect(imported.standardOutput.contains("imported Visa key-encryption key 'issuerd-visa-kek'"))
        #expect(!imported.standardOutput.contains(VisaPushTests.secret))
        let again = try CommandLineRunner.run(
            ["keys", "hsm", "import-visa-secret", "--secret-file", file], environment: environment)
        #expect(again.status == 1 && again.standardError.contains("already holds"), "\(again.standardError)")
        let info = try #require(try store.token.objects().first { $0.label == "issuerd-visa-kek" })
        #expect(info.keyType == "AES" && info.bits == 256)
        #expect(info.sensitive == true && info.extractable == false && info.usage == ["encrypt"])

        environment["ISSUERD_VISA_ENCRYPTION_API_KEY"] = VisaPushTests.apiKey
        environment["ISSUERD_VISA_ENCRYPTION_KEY_LABEL"] = "issuerd-visa-kek"
        environment["ISSUERD_VISA_CLIENT_APP_ID"] = VisaPushTests.clientAppID
        let status = try CommandLineRunner.run(["keys", "hsm", "status"], environment: environment)
        #expect(
            status.standardOutput.contains("Visa key-encryption key 'issuerd-visa-kek': ok"), "\(status.standardOutput)"
        )

        let app = try TestApplication(
            environment: environment, rulesDirectory: try GooglePayFixtures.rules(), prepare: HSMKeyTests.migrate)
        try GooglePayFixtures.cardholder(app, network: "visa")
        let started = Date()
        let google = try VisaPushTests.google(app, card: "card-visa")
        #expect(google.status == 200, "\(google.text)")
        let jwe = try #require(google.jsonObject()?["opaquePaymentCard"] as? String)
        try VisaPushTests.checkVisa(
            jwe, requestor: "40010075001", deviceID: "gp-device-1", accountID: "gp-wallet-1", verified: true,
            pushedAt: started)
        #expect(try VisaPushTests.open(jwe, secret: VisaPushTests.secret + "!")["opened"] as? Bool == false)
        let samsung = try VisaPushTests.samsung(app, card: "card-visa")
        #expect(samsung.status == 200, "\(samsung.text)")
        try VisaPushTests.checkVisa(
            try #require(samsung.jsonObject()?["provisionPayload"] as? String), requestor: "40010043095",
            deviceID: "ss-device-1", accountID: "ss-user-1", verified: true, pushedAt: started)
    }

    @Test(
        "The HSM label without an HSM, beside the secret's file, naming a key that may not encrypt or no key: start-up stops naming it"
    )
    func labelRefusals() throws {
        let visa = [
            "ISSUERD_VISA_ENCRYPTION_API_KEY": VisaPushTests.apiKey,
            "ISSUERD_VISA_CLIENT_APP_ID": VisaPushTests.clientAppID,
            "ISSUERD_VISA_ENCRYPTION_KEY_LABEL": "issuerd-visa-kek",
        ]
        func refusal(_ environment: [String: String], migrated: Bool = false) -> ConfigurationError? {
            let prepare: ((TestDatabase) throws -> Void)? = migrated ? { try HSMKeyTests.migrate($0) } : nil
            do {
                _ = try TestApplication(environment: environment, prepare: prepare)
                return nil
            } catch let error as ConfigurationError {
                return error
            } catch {
                Issue.record("not a configuration error: \(error)")
                return nil
            }
        }
        let noHSM = refusal(visa)
        #expect(
            noHSM?.key == "ISSUERD_VISA_ENCRYPTION_KEY_LABEL"
                && noHSM?.problem.contains("ISSUERD_PKCS11_MODULE") == true)
        let file = try Self.secretFile(in: try TestScratch.directory("issuerd-visa-both"))
        let both = refusal(visa.merging(["ISSUERD_VISA_ENCRYPTION_SHARED_SECRET": file]) { _, new in new })
        #expect(both?.key == "ISSUERD_VISA_ENCRYPTION_KEY_LABEL" && both?.problem.contains("not both") == true)

        let (token, _) = try HSMKeyTests.initialisedToken()
        let hsm = HSMKeyTests.hsmEnvironment(token, tav: false).merging(visa) { _, new in new }
        let missing = refusal(hsm, migrated: true)
        #expect(
            missing?.key == "ISSUERD_VISA_ENCRYPTION_KEY_LABEL" && missing?.problem.contains("no secret key") == true)
        let wrapping = refusal(
            hsm.merging(["ISSUERD_VISA_ENCRYPTION_KEY_LABEL": HSMSettings.defaultWrappingKeyLabel]) { _, new in new },
            migrated: true)
        #expect(
            wrapping?.key == "ISSUERD_VISA_ENCRYPTION_KEY_LABEL" && wrapping?.problem.contains("CKA_ENCRYPT") == true)
    }
}
