import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdKeys
import IssuerdPostgres
import IssuerdStorage
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI
@_spi(Testing) @testable import IssuerdPKCS11

/// Issuer keys in SoftHSM2 through the service and the operator commands: the move from an
/// environment master key to HSM-wrapped data keys, rotation, provisioning with PANs and TAVs
/// from the HSM (checked by an independent verifier), and every start-up fault naming its setting.
@Suite("Issuer keys in an HSM (SoftHSM2)")
struct HSMKeyTests {
    static let masterKeyV1 = Data(repeating: 0x42, count: 32).base64EncodedString()

    /// The `ISSUERD_PKCS11_*` settings for `token`.
    static func hsmEnvironment(_ token: SoftHSMToken, tav: Bool = true) -> [String: String] {
        var environment = [
            "ISSUERD_PKCS11_MODULE": SoftHSM.modulePath, "ISSUERD_PKCS11_TOKEN_LABEL": token.label,
            "ISSUERD_PKCS11_PIN_FILE": token.pinFile,
            "SOFTHSM2_CONF": token.directory.appendingPathComponent("softhsm2.conf").path,
        ]
        if tav { environment["ISSUERD_PKCS11_SIGNING_KEY_LABEL"] = "issuerd-tav" }
        return environment
    }

    /// A token holding the default wrapping key and TAV key, as `keys hsm init` makes them.
    static func initialisedToken() throws -> (SoftHSMToken, HSMKeyStore) {
        let token = try SoftHSM.makeToken()
        let settings = try #require(
            try HSMSettings.read(ConfigurationReader(hsmEnvironment(token)), defaultSessions: 4))
        let store = try HSMKeyStore.open(settings)
        try store.token.createWrappingKey(label: HSMSettings.defaultWrappingKeyLabel)
        try store.token.createRSASigningKey(label: "issuerd-tav")
        return (token, store)
    }

    static func migrate(_ database: TestDatabase) throws {
        let pool = database.makePool(size: 1)
        defer { pool.close() }
        _ = try Migrator(
            directory: TestApplication.repositoryRoot.appendingPathComponent("sql"),
            logger: Logger(label: "test", minimumLevel: .critical, handler: DiscardingLogHandler())
        )
        .migrate(using: pool)
    }

    @Test(
        "Moving from the environment key to the HSM: import, a generated data key, rotation online, fingerprints kept")
    func moveToHSMAndRotate() throws {
        let app = try TestApplication()  // environment master key, version 1
        let admin = try app.apiKey(role: .admin)
        for serial in 1...4 {
            try AdminFixtures.registerCard(
                app, adminKey: admin, customer: "cust-\(serial)", card: "card-\(serial)", serial: serial)
        }
        let (token, store) = try Self.initialisedToken()
        let database = app.database.connectionString
        var environment = Self.hsmEnvironment(token)
        environment["ISSUERD_DATABASE_URL"] = database

        // 1. Import the environment key under its version; a second import finds it stored.
        environment["ISSUERD_MASTER_KEY"] = Self.masterKeyV1
        let imported = try CommandLineRunner.run(
            ["keys", "hsm", "add-data-key", "--import-master-key"], environment: environment)
        #expect(imported.status == 0, "\(imported.standardError)")
        #expect(imported.standardOutput.contains("stored data key version 1"))
        let again = try CommandLineRunner.run(
            ["keys", "hsm", "add-data-key", "--import-master-key"], environment: environment)
        #expect(
            again.standardOutput.contains("data key version 1 is stored already (same key)"), "\(again.standardError)")

        // 2. Without the environment key, the ring comes from the HSM alone and opens every card.
        environment["ISSUERD_MASTER_KEY"] = nil
        let hsmOnly = try OperatorSettings.vault(ConfigurationReader(environment))
        #expect(hsmOnly.keyRing.versions == [1])
        for serial in 1...4 {
            let record = try #require(
                try app.pool.withConnection { try CardStore.find("card-\(serial)", connection: $0) })
            #expect(try CardStore.openPAN(record, vault: hsmOnly).unsafeDigits == AdminFixtures.pan(serial: serial))
        }

        // 3. A data key generated in the HSM becomes version 2; keys rotate re-seals under it.
        let generated = try CommandLineRunner.run(["keys", "hsm", "add-data-key"], environment: environment)
        #expect(generated.status == 0, "\(generated.standardError)")
        #expect(generated.standardOutput.contains("stored data key version 2"))
        let rotated = try CommandLineRunner.run(["keys", "rotate", "--batch-size", "3"], environment: environment)
        #expect(rotated.status == 0, "\(rotated.standardError)")
        #expect(
            rotated.standardOutput.contains("re-sealed 4 card(s) in 2 batch(es); every card is under key version 2"))
        let vault = try OperatorSettings.vault(ConfigurationReader(environment))
        #expect(
            vault.keyRing.versions == [1, 2] && vault.keyRing.currentVersion == 2
                && vault.keyRing.fingerprintVersion == 1)
        for serial in 1...4 {
            let record = try #require(
                try app.pool.withConnection { try CardStore.find("card-\(serial)", connection: $0) })
            #expect(record.sealedPAN.keyVersion == 2)
            #expect(try CardStore.openPAN(record, vault: vault).unsafeDigits == AdminFixtures.pan(serial: serial))
            let pan = try #require(PrimaryAccountNumber(AdminFixtures.pan(serial: serial)))
            #expect(
                try app.pool.withConnection { try CardStore.find(pan: pan, vault: vault, connection: $0) }?.cardID
                    == "card-\(serial)")
        }
        // The instance still running on the environment key keeps serving version-1 reads until
        // restarted; rows under version 2 need the HSM ring (restart before rotating: runbook).
        #expect(throws: CryptoError.self) {
            let record = try #require(try app.pool.withConnection { try CardStore.find("card-1", connection: $0) })
            _ = try CardStore.openPAN(record, vault: app.application.context.vault)
        }

        // 4. status lists the keys with their flags and the stored versions, no secret.
        let status = try CommandLineRunner.run(["keys", "hsm", "status"], environment: environment)
        #expect(status.status == 0, "\(status.standardError)")
        #expect(
            status.standardOutput.contains(
                "'issuerd-pan-kek' secret key AES-256 sensitive=true extractable=false never-extractable=true usage=wrap,unwrap"
            ))
        #expect(
            status.standardOutput.contains(
                "'issuerd-tav' private key RSA-2048 sensitive=true extractable=false never-extractable=true usage=sign")
        )
        #expect(status.standardOutput.contains("version 1: imported"))
        #expect(status.standardOutput.contains("version 2: generated"))
        #expect(status.standardOutput.contains("TAV signing key 'issuerd-tav': ok"))
        let everything =
            status.standardOutput + status.standardError + imported.standardOutput + generated.standardOutput
            + rotated.standardOutput
        #expect(!everything.contains(token.pin))
        #expect(!everything.contains(Self.masterKeyV1))
        for serial in 1...4 { #expect(!everything.contains(AdminFixtures.pan(serial: serial))) }
        #expect(try AuditChainCheck.verify(database: app.pool).isIntact)
        #expect(
            try app.pool.withConnection {
                try $0.query("SELECT count(*) AS n FROM audit_log WHERE action = 'keys.hsm.data_key_added'").first!
                    .decode("n", as: Int64.self)
            } == 2)
        _ = store
    }

    @Test(
        "A service on HSM keys provisions a Mastercard card: PAN from an HSM-wrapped key, TAV signed in the HSM and verified by Python"
    )
    func provisionWithHSMKeys() throws {
        let (token, store) = try Self.initialisedToken()
        var environment = Self.hsmEnvironment(token)
        environment["ISSUERD_MASTER_KEY"] = ""
        environment["ISSUERD_TAV_SIGNING_KEY"] = ""
        let app = try TestApplication(
            environment: environment,
            prepare: { database in
                try Self.migrate(database)
                let pool = database.makePool(size: 1)
                defer { pool.close() }
                _ = try HSMDataKeyProvisioning.addGenerated(hsm: store, masterKeys: [], database: pool, actor: "test")
            })
        #expect(app.application.context.vault.keyRing.versions == [1])
        #expect(app.application.context.vault.keyRing.isMemoryLocked)
        let ready = try app.client.get("/readyz")
        #expect(ready.status == 200)
        #expect(ready.text.contains("\"hsm\"") && ready.text.contains("token '\(token.label)'"), "\(ready.text)")
        try DecisionFixtures.customer(app, "cust-1")
        try DecisionFixtures.card(
            app, "card-1", customer: "cust-1", pan: DecisionFixtures.mastercardPAN, expiration: "03/29",
            network: "mastercard")
        let response = try DecisionFixtures.provision(
            app, card: "card-1", customer: "cust-1", body: try DecisionFixtures.provisionBody(app))
        #expect(response.status == 200, "\(response.text)")
        let body = try #require(response.jsonObject())
        let plaintext = try DecisionFixtures.decrypt(
            app, encryptedPassData: try #require(body["encryptedPassData"] as? String),
            ephemeralPublicKey: try #require(body["ephemeralPublicKey"] as? String))
        #expect(plaintext["primaryAccountNumber"] == DecisionFixtures.mastercardPAN)
        let tav = String(
            decoding: Data(try BinaryEncoding.decodeBase64(try #require(body["activationData"] as? String))),
            as: UTF8.self)
        let (modulus, exponent) = try store.token.rsaPublicKey(label: "issuerd-tav")
        let verdict = try Self.verifyTAV(
            tav, modulus: modulus, exponent: exponent, pan: DecisionFixtures.mastercardPAN, expiry: "0329")
        #expect(verdict.valid && verdict.bits == 2048)
        // The same TAV with one digit of the PAN changed does not verify: the oracle can fail.
        #expect(
            !(try Self.verifyTAV(tav, modulus: modulus, exponent: exponent, pan: "5399999999999998", expiry: "0329"))
                .valid)

        // The HSM closes every session (a restart): the next request re-opens and succeeds.
        store.token.closeAllSessionsForTesting()
        let after = try DecisionFixtures.provision(
            app, card: "card-1", customer: "cust-1", body: try DecisionFixtures.provisionBody(app))
        #expect(after.status == 200, "\(after.text)")
        let tavAfter = String(
            decoding: Data(
                try BinaryEncoding.decodeBase64(try #require(after.jsonObject()?["activationData"] as? String))),
            as: UTF8.self)
        #expect(
            try Self.verifyTAV(
                tavAfter, modulus: modulus, exponent: exponent, pan: DecisionFixtures.mastercardPAN, expiry: "0329"
            ).valid)
    }

    @Test(
        "A TAV key removed from the HSM while serving: a 500, never an answer without its TAV; no PAN, PIN or key byte in any log line"
    )
    func lostKeyIsA500AndLogsHoldNoSecret() throws {
        let (token, store) = try Self.initialisedToken()
        var environment = Self.hsmEnvironment(token)
        environment["ISSUERD_MASTER_KEY"] = ""
        environment["ISSUERD_TAV_SIGNING_KEY"] = ""
        environment["ISSUERD_LOG_LEVEL"] = "trace"
        let log = LineCollector()
        let wrapped = Lock<[UInt8]>([])
        let app = try TestApplication(
            environment: environment,
            prepare: { database in
                try Self.migrate(database)
                let pool = database.makePool(size: 1)
                defer { pool.close() }
                _ = try HSMDataKeyProvisioning.addGenerated(hsm: store, masterKeys: [], database: pool, actor: "test")
                let key = try pool.withConnection { try HSMDataKey.all(connection: $0) }.first!.wrappedKey
                wrapped.withLock { $0 = key }
            }, logger: Logger(label: "test", minimumLevel: .trace, handler: log))
        try DecisionFixtures.customer(app, "cust-1")
        try DecisionFixtures.card(
            app, "card-1", customer: "cust-1", pan: DecisionFixtures.mastercardPAN, expiration: "03/29",
            network: "mastercard")
        #expect(
            try DecisionFixtures.provision(
                app, card: "card-1", customer: "cust-1", body: try DecisionFixtures.provisionBody(app)
            ).status == 200)
        try store.token.withSession { session in
            // Object class 3 is CKO_PRIVATE_KEY.
            session.destroy(try store.token.handle(label: "issuerd-tav", objectClass: 3, session: session))
        }
        let failed = try DecisionFixtures.provision(
            app, card: "card-1", customer: "cust-1", body: try DecisionFixtures.provisionBody(app))
        #expect(failed.status == 500)
        #expect(failed.jsonObject()?["activationData"] == nil && failed.jsonObject()?["encryptedPassData"] == nil)
        #expect(!failed.text.contains(DecisionFixtures.mastercardPAN))

        let lines = log.lines.joined(separator: "\n")
        #expect(lines.contains("key_not_found"), "the log names the cause")
        #expect(!lines.contains(DecisionFixtures.mastercardPAN))
        #expect(!lines.contains(token.pin))
        let key = wrapped.withLock { $0 }
        #expect(!lines.contains(BinaryEncoding.hexString(key)) && !lines.contains(BinaryEncoding.base64String(key)))
        let dataKey = try store.unwrap(
            HSMDataKey(
                version: 1, wrappedKey: key, wrappingKeyLabel: HSMSettings.defaultWrappingKeyLabel, origin: "generated",
                createdAt: Date()))
        dataKey.withUnsafeBytes { bytes in
            #expect(
                !lines.contains(BinaryEncoding.hexString(bytes))
                    && !lines.contains(BinaryEncoding.base64String(Array(bytes))))
        }
    }

    @Test("Start-up faults name their setting: module path, token, PIN, wrapping key, TAV key, no data keys")
    func startupFaultsNameTheSetting() throws {
        let (token, store) = try Self.initialisedToken()
        var base = Self.hsmEnvironment(token)
        base["ISSUERD_MASTER_KEY"] = ""
        func failure(_ changes: [String: String], prepare: Bool = true) throws -> ConfigurationError? {
            var environment = base
            environment["ISSUERD_TAV_SIGNING_KEY"] = ""
            environment.merge(changes) { _, new in new }
            do {
                _ = try TestApplication(
                    environment: environment,
                    prepare: { database in
                        guard prepare else { return }
                        try Self.migrate(database)
                        let pool = database.makePool(size: 1)
                        defer { pool.close() }
                        _ = try HSMDataKeyProvisioning.addGenerated(
                            hsm: store, masterKeys: [], database: pool, actor: "test")
                    })
                return nil
            } catch let error as ConfigurationError {
                return error
            }
        }
        let module = try failure(["ISSUERD_PKCS11_MODULE": "/usr/lib/softhsm/libnothere.so"])
        #expect(module?.key == "ISSUERD_PKCS11_MODULE")
        #expect(module?.problem.contains("/usr/lib/softhsm/libnothere.so") == true)
        #expect(try failure(["ISSUERD_PKCS11_MODULE": "libsofthsm2.so"])?.key == "ISSUERD_PKCS11_MODULE")
        #expect(try failure(["ISSUERD_PKCS11_TOKEN_LABEL": "missing-token"])?.key == "ISSUERD_PKCS11_TOKEN_LABEL")
        // A token this process never logged in to: Cryptoki's login is per process and token, so
        // a second login to `token` would be "already logged in" whatever the PIN.
        let fresh = try SoftHSM.makeToken()
        let pin = try failure(
            ["ISSUERD_PKCS11_TOKEN_LABEL": fresh.label, "ISSUERD_PKCS11_PIN_FILE": try fresh.wrongPINFile()],
            prepare: false)
        #expect(pin?.key == "ISSUERD_PKCS11_PIN_FILE")
        #expect(pin?.problem.contains("CKR_PIN_INCORRECT") == true)
        #expect(pin.map { "\($0)".contains(fresh.pin) } == false)
        #expect(try failure(["ISSUERD_PKCS11_PIN_FILE": "/nonexistent/pin"])?.key == "ISSUERD_PKCS11_PIN_FILE")
        #expect(try failure(["ISSUERD_PKCS11_WRAP_KEY_LABEL": "no-such-kek"])?.key == "ISSUERD_PKCS11_WRAP_KEY_LABEL")
        #expect(
            try failure(["ISSUERD_PKCS11_SIGNING_KEY_LABEL": "no-such-tav"])?.key == "ISSUERD_PKCS11_SIGNING_KEY_LABEL")
        // The wrapping key used as the TAV key: not an RSA private key.
        #expect(
            try failure(["ISSUERD_PKCS11_SIGNING_KEY_LABEL": HSMSettings.defaultWrappingKeyLabel])?.key
                == "ISSUERD_PKCS11_SIGNING_KEY_LABEL")
        // A migrated database without data keys, and no environment key.
        let empty = try failure([:], prepare: false)
        #expect(empty?.key == "ISSUERD_PKCS11_MODULE" || empty?.key == "ISSUERD_PKCS11_WRAP_KEY_LABEL")
        #expect(try failure(["ISSUERD_PKCS11_MODULE": ""])?.key == "ISSUERD_PKCS11_TOKEN_LABEL")
        let both = try failure([
            "ISSUERD_PKCS11_SIGNING_KEY_LABEL": "issuerd-tav", "ISSUERD_TAV_SIGNING_KEY": "-----BEGIN PRIVATE KEY-----",
        ])
        #expect(both?.key == "ISSUERD_PKCS11_SIGNING_KEY_LABEL")
    }

    @Test(
        "keys hsm init creates non-extractable keys, is idempotent, reads the PIN from stdin, and prints the TAV public key"
    )
    func initCommand() throws {
        let token = try SoftHSM.makeToken()
        var environment = Self.hsmEnvironment(token)
        environment["ISSUERD_PKCS11_PIN_FILE"] = nil
        let help = try CommandLineRunner.run(["keys", "hsm", "--help"], environment: [:])
        #expect(help.status == 0 && help.standardOutput.contains("issuerd keys hsm init"))
        let first = try CommandLineRunner.run(
            ["keys", "hsm", "init", "--pin-stdin"], environment: environment, input: token.pin + "\n")
        #expect(first.status == 0, "\(first.standardError)")
        #expect(first.standardOutput.contains("created wrapping key 'issuerd-pan-kek'"))
        #expect(first.standardOutput.contains("created TAV signing key 'issuerd-tav'"))
        #expect(first.standardOutput.contains("-----BEGIN PUBLIC KEY-----"))
        #expect(!first.standardOutput.contains(token.pin))
        environment["ISSUERD_PKCS11_PIN_FILE"] = token.pinFile
        let second = try CommandLineRunner.run(["keys", "hsm", "init"], environment: environment)
        #expect(second.status == 0, "\(second.standardError)")
        #expect(second.standardOutput.contains("wrapping key 'issuerd-pan-kek' is present"))
        // The public key printed is the token's: openssl verifies a signature made in the HSM.
        let pem = try #require(
            second.standardOutput.range(of: "-----BEGIN PUBLIC KEY-----").map {
                String(second.standardOutput[$0.lowerBound...])
            })
        let settings = try #require(try HSMSettings.read(ConfigurationReader(environment), defaultSessions: 2))
        let signer = try #require(try HSMKeyStore.open(settings).tavSigner())
        let message = Array("5399999999999999|0329|2030-01-01T00:00:00Z".utf8)
        #expect(try Self.opensslVerifies(pem: pem, signature: signer.signature(for: message), message: message))
        #expect(
            !(try Self.opensslVerifies(pem: pem, signature: signer.signature(for: message), message: message + [0x20])))
        let wrong = try CommandLineRunner.run(
            ["keys", "hsm", "init"],
            environment: environment.merging(["ISSUERD_PKCS11_PIN_FILE": try token.wrongPINFile()]) { _, new in new })
        #expect(wrong.status == 1)
        #expect(wrong.standardError.contains("ISSUERD_PKCS11_PIN_FILE"))
        let noModule = try CommandLineRunner.run(["keys", "hsm", "status"], environment: [:])
        #expect(noModule.status == 1 && noModule.standardError.contains("ISSUERD_PKCS11_MODULE"))
    }

    @Test("A wrong HSM PIN makes issuerd serve exit 78, the status the systemd unit does not restart")
    func wrongPINExits78() throws {
        let token = try SoftHSM.makeToken()
        let database = try TestDatabase.create()
        defer { database.drop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("issuerd-pin-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        var environment = try ServeLifecycleTests.environment(database: database, directory: directory, port: 1)
        environment.merge(Self.hsmEnvironment(token, tav: false)) { _, new in new }
        environment["ISSUERD_PKCS11_PIN_FILE"] = try token.wrongPINFile()
        environment["ISSUERD_MASTER_KEY"] = nil
        let result = try CommandLineRunner.run(["serve"], environment: environment)
        #expect(result.status == 78, "\(result.standardError)")
        #expect(result.standardError.contains("ISSUERD_PKCS11_PIN_FILE"))
        #expect(result.standardError.contains("CKR_PIN_INCORRECT"))
        #expect(!result.standardError.contains(token.pin))
    }

    @Test("keys hsm refuses to run as another user than the SoftHSM token directory's owner")
    func otherUserRefused() throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("issuerd-owner-\(UUID())")
        defer { try? FileManager.default.removeItem(at: scratch) }
        var tokens = scratch.appendingPathComponent("tokens").path
        try FileManager.default.createDirectory(atPath: tokens, withIntermediateDirectories: true)
        // A directory another user owns: given to nobody when the tests run as root, else root's `/`.
        if geteuid() == 0 {
            #expect(chown(tokens, 65534, 65534) == 0)
        } else {
            tokens = "/"
        }
        let configuration = scratch.appendingPathComponent("softhsm2.conf").path
        try "directories.tokendir = \(tokens)\nobjectstore.backend = file\n".write(
            toFile: configuration, atomically: true, encoding: .utf8)
        let environment = [
            "ISSUERD_PKCS11_MODULE": SoftHSM.modulePath, "ISSUERD_PKCS11_TOKEN_LABEL": "issuerd",
            "ISSUERD_PKCS11_PIN_FILE": scratch.appendingPathComponent("pin").path, "SOFTHSM2_CONF": configuration,
        ]
        for command in [["status"], ["init"], ["add-data-key"]] {
            let result = try CommandLineRunner.run(["keys", "hsm"] + command, environment: environment)
            #expect(result.status == 1)
            #expect(result.standardError.contains("the SoftHSM token directory \(tokens) belongs to user"))
            #expect(result.standardError.contains("run keys hsm as"))
        }
    }

    /// Every log line the application writes, in the production JSON format.
    final class LineCollector: LogHandler, Sendable {
        private let storage = Lock<[String]>([])
        func write(_ record: LogRecord) { storage.withLock { $0.append(JSONLogHandler.format(record)) } }
        var lines: [String] { storage.withLock { $0 } }
    }

    static func verifyTAV(
        _ tav: String, modulus: [UInt8], exponent: [UInt8], pan: String, expiry: String
    ) throws -> (valid: Bool, bits: Int) {
        guard let python = ProcessInfo.processInfo.environment["ISSUERD_TEST_PYTHON"], !python.isEmpty else {
            Issue.record("ISSUERD_TEST_PYTHON is not set: run the tests through scripts/test")
            throw CancellationError()
        }
        let script = TestApplication.repositoryRoot.appendingPathComponent(
            "Tests/IssuerdCryptoTests/Oracle/verify_tav.py"
        ).path
        let request = [
            "modulusHex": BinaryEncoding.hexString(modulus), "exponentHex": BinaryEncoding.hexString(exponent),
            "tav": tav, "pan": pan, "expiry": expiry,
        ]
        let output = try ExternalProcess.run(python, [script], input: try JSONEncoder().encode(request))
        #expect(output.status == 0, "oracle: \(output.stderr)")
        let answer = try JSONSerialization.jsonObject(with: output.stdout) as? [String: Any]
        return ((answer?["valid"] as? Bool) ?? false, (answer?["bits"] as? Int) ?? 0)
    }

    static func opensslVerifies(pem: String, signature: [UInt8], message: [UInt8]) throws -> Bool {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "issuerd-hsm-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data(pem.utf8).write(to: directory.appendingPathComponent("key.pem"))
        try Data(signature).write(to: directory.appendingPathComponent("sig"))
        try Data(message).write(to: directory.appendingPathComponent("msg"))
        let result = try ExternalProcess.run(
            "/usr/bin/openssl",
            [
                "dgst", "-sha256", "-verify", directory.appendingPathComponent("key.pem").path, "-signature",
                directory.appendingPathComponent("sig").path,
                directory.appendingPathComponent("msg").path,
            ])
        return result.status == 0
    }

}
