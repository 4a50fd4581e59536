import Foundation
import IssuerdAuth
import IssuerdCore
import IssuerdCrypto
import IssuerdHTTP
import IssuerdImport
import IssuerdPostgres
import IssuerdStorage
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

@Suite("Operator commands: apikey create, cards import, keys rotate, dev token")
struct OperatorCommandTests {
    private static let masterKeyV1 = Data(repeating: 0x42, count: 32).base64EncodedString()
    private static let masterKeyV2 = Data(repeating: 0x17, count: 32).base64EncodedString()

    private func count(_ app: TestApplication, _ table: String) throws -> Int64 {
        try app.pool.withConnection {
            try $0.query("SELECT count(*) AS n FROM \(unsafeSQL: table)").first!.decode("n", as: Int64.self)
        }
    }

    private func writeFile(_ app: TestApplication, _ lines: [String]) throws -> URL {
        try FileManager.default.createDirectory(at: app.directory, withIntermediateDirectories: true)
        let url = app.directory.appendingPathComponent("cards-\(UUID().uuidString).jsonl")
        try Data(lines.joined(separator: "\n").utf8).write(to: url)
        return url
    }

    private func line(card: String, customer: String, serial: Int, extra: String = "") -> String {
        #"{"cardId":"\#(card)","customerId":"\#(customer)","accountNumber":"\#(AdminFixtures.pan(serial: serial))","expiration":"\#(AdminFixtures.futureExpiration)","cardholderName":"KIM","paymentNetwork":"visa"\#(extra)}"#
    }

    @Test("apikey create prints a working key as the last line and audits it without the key")
    func apiKeyCreate() throws {
        let app = try TestApplication()
        let result = try CommandLineRunner.run(
            ["apikey", "create", "--role", "analyst", "--name", "fraud desk"],
            environment: ["ISSUERD_DATABASE_URL": app.serviceConnectionString])
        #expect(result.status == 0, "\(result.standardError)")
        let key = try #require(result.lastLine)
        #expect(key.hasPrefix("isk_"))
        #expect(try app.client.get("/v1/admin/cards/none", headers: AdminFixtures.bearer(key)).status == 404)
        #expect(
            try app.client.postJSON("/v1/admin/customers", #"{"customerId":"c"}"#, headers: AdminFixtures.bearer(key))
                .status == 403)
        let audit = try app.pool.withConnection { connection in
            try connection.query("SELECT actor, details FROM audit_log WHERE action = 'apikey.created'").map {
                (try $0.decode("actor", as: String.self), try $0.decode("details", as: String.self))
            }
        }
        #expect(audit.count == 1)
        #expect(audit.first?.0 == "cli:tester")
        #expect(audit.first?.1.contains("fraud desk") == true)
        #expect(audit.first?.1.contains(key) == false)

        let missing = try CommandLineRunner.run(
            ["apikey", "create", "--role", "admin", "--name", "x"], environment: [:])
        #expect(missing.status == 1)
        #expect(missing.standardError.contains("ISSUERD_DATABASE_URL"))
    }

    @Test("cards import registers every line with its customer in one transaction and audits it in one summary entry")
    func importFile() throws {
        let app = try TestApplication()
        let file = try writeFile(
            app,
            [
                "# cards for the pilot",
                line(
                    card: "imp-1", customer: "cust-a", serial: 101,
                    extra: #","customer":{"phoneNumber":"010-1111-2222","email":"a@example.com"}"#),
                "",
                line(card: "imp-2", customer: "cust-a", serial: 102),
                line(card: "imp-3", customer: "cust-b", serial: 103, extra: #","customer":{"customerId":"cust-b"}"#),
            ])
        var progress: [Int] = []
        let summary = try CardImport.run(
            file: file, actor: "cli:test", now: Date(),
            vault: PANVault(keyRing: MasterKeyRing(settingValue: Self.masterKeyV1)),
            database: app.pool, progressEvery: 2
        ) { progress.append($0) }
        #expect(summary == CardImport.Summary(cards: 3, customersCreated: 2, customersUpdated: 0))
        #expect(progress == [2])
        #expect(try count(app, "cards") == 3)
        // The service opens what the import sealed (same master key).
        let analyst = try app.apiKey(role: .analyst)
        #expect(
            try app.client.get("/v1/admin/cards/imp-3", headers: AdminFixtures.bearer(analyst)).jsonObject()?[
                "customerId"] as? String == "cust-b")
        let actions = try app.pool.withConnection { connection in
            try connection.query("SELECT action FROM audit_log ORDER BY id").map {
                try $0.decode("action", as: String.self)
            }
        }
        // One summary entry: one chained entry per card would hold the audit lock (and every
        // other audited writer) for the length of the import.
        #expect(actions == ["cards.imported"])
        let details = try app.pool.withConnection {
            try $0.query("SELECT details FROM audit_log").first!.decode("details", as: String.self)
        }
        var chain = [UInt8](repeating: 0, count: 32)
        for card in ["imp-1", "imp-2", "imp-3"] { chain = SHA256.hash(chain + Array(card.utf8)) }
        #expect(details.contains(#""cardIdsSHA256":"\#(BinaryEncoding.hexString(chain))""#), "\(details)")
        #expect(details.contains(#""cards":"3""#) && details.contains(#""customersCreated":"2""#))
        #expect(try AuditChainCheck.verify(database: app.pool).isIntact)
    }

    @Test(
        "A bad record stops the import with its line number and leaves nothing behind",
        arguments: [
            (
                #"{"cardId":"x","customerId":"cust-a","accountNumber":"4111111111111112","expiration":"12/39","cardholderName":"K","paymentNetwork":"visa"}"#,
                "Luhn"
            ),
            (
                #"{"cardId":"x","customerId":"nobody","accountNumber":"4000000000000002","expiration":"12/39","cardholderName":"K","paymentNetwork":"visa"}"#,
                "no such customer"
            ),
            (
                #"{"cardId":"imp-1","customerId":"cust-a","accountNumber":"4000000000000002","expiration":"12/39","cardholderName":"K","paymentNetwork":"visa"}"#,
                "already exists"
            ),
            (#"{"cardId":"x","customerId":"cust-a"}"#, "accountNumber"),
            ("not json at all", "not valid JSON"),
            (
                #"{"cardId":"x","customerId":"cust-a","accountNumber":"4000000000000002","expiration":"12/39","cardholderName":"K","paymentNetwork":"visa","customer":{"email":"bad"}}"#,
                "email"
            ),
        ])
    func importFailure(badLine: String, message: String) throws {
        let app = try TestApplication()
        let file = try writeFile(
            app,
            [
                line(card: "imp-1", customer: "cust-a", serial: 201, extra: #","customer":{}"#),
                line(card: "imp-2", customer: "cust-a", serial: 202),
                badLine,
                line(card: "imp-4", customer: "cust-a", serial: 204),
            ])
        let vault = PANVault(keyRing: try MasterKeyRing(settingValue: Self.masterKeyV1))
        do {
            _ = try CardImport.run(file: file, actor: "cli:test", now: Date(), vault: vault, database: app.pool)
            Issue.record("the import should have failed")
        } catch let error as CommandInputError {
            #expect(error.description.hasPrefix("\(file.lastPathComponent):3: "), "\(error)")
            #expect(error.description.contains(message), "\(error)")
            #expect(!error.description.contains("4000000000000002"))
        }
        #expect(try count(app, "cards") == 0)
        #expect(try count(app, "customers") == 0)
        #expect(try count(app, "audit_log") == 0)
    }

    @Test("cards import through the executable: exit 1 with the line on a bad file, exit 0 and a summary on a good one")
    func importCommand() throws {
        let app = try TestApplication()
        let environment = [
            "ISSUERD_DATABASE_URL": app.serviceConnectionString, "ISSUERD_MASTER_KEY": Self.masterKeyV1,
        ]
        let bad = try writeFile(app, [line(card: "c1", customer: "cust-a", serial: 1, extra: #","customer":{}"#), "{"])
        let failed = try CommandLineRunner.run(["cards", "import", bad.path], environment: environment)
        #expect(failed.status == 1)
        #expect(failed.standardError.contains(":2: "), "\(failed.standardError)")
        #expect(try count(app, "cards") == 0)
        let good = try writeFile(app, [line(card: "c1", customer: "cust-a", serial: 1, extra: #","customer":{}"#)])
        let imported = try CommandLineRunner.run(
            ["cards", "import", "--progress-every", "1", good.path], environment: environment)
        #expect(imported.status == 0, "\(imported.standardError)")
        #expect(imported.standardOutput.contains("imported 1 card(s)"))
        #expect(imported.standardError.contains("cards import: 1 cards"))
        #expect(
            !imported.standardOutput.contains(AdminFixtures.pan(serial: 1))
                && !imported.standardError.contains(AdminFixtures.pan(serial: 1)))
        let missingKey = try CommandLineRunner.run(
            ["cards", "import", good.path], environment: ["ISSUERD_DATABASE_URL": app.serviceConnectionString])
        #expect(missingKey.status == 1)
        #expect(missingKey.standardError.contains("ISSUERD_MASTER_KEY:"))
    }

    @Test("keys rotate re-seals every old card in batches, skips locked rows until they free up, and is idempotent")
    func rotate() throws {
        let app = try TestApplication()
        let admin = try app.apiKey(role: .admin)
        for serial in 1...5 {
            try AdminFixtures.registerCard(
                app, adminKey: admin, customer: "cust-\(serial)", card: "card-\(serial)", serial: serial)
        }
        let vault = try OperatorSettings.vault(
            ConfigurationReader([
                "ISSUERD_MASTER_KEY": Self.masterKeyV2, "ISSUERD_MASTER_KEY_VERSION": "2",
                "ISSUERD_MASTER_KEY_PREVIOUS": "1:\(Self.masterKeyV1)",
            ]))
        // Another session holds card-3 (as the service would during a status change).
        let holder = try PostgresConnection(connectionString: app.database.connectionString)
        try holder.execute(unsafeSQL: "BEGIN")
        _ = try holder.query("SELECT card_id FROM cards WHERE card_id = 'card-3' FOR UPDATE")
        do {
            _ = try PANKeyRotation.run(
                database: app.pool, vault: vault, actor: "cli:test", batchSize: 2, lockedRetries: 0)
            Issue.record("rotation should report the locked card")
        } catch let error as CommandInputError {
            #expect(error.description.contains("1 card(s) stayed locked"))
        }
        try holder.execute(unsafeSQL: "ROLLBACK")
        let versions = {
            try app.pool.withConnection { connection in
                try connection.query("SELECT card_id, pan_key_version FROM cards ORDER BY card_id").map {
                    (try $0.decode("card_id", as: String.self), try $0.decode("pan_key_version", as: Int.self))
                }
            }
        }
        #expect(try versions().filter { $0.1 == 1 }.map(\.0) == ["card-3"])
        let rest = try PANKeyRotation.run(database: app.pool, vault: vault, actor: "cli:test", batchSize: 2)
        #expect(rest == PANKeyRotation.Summary(resealed: 1, batches: 1, currentVersion: 2))
        #expect(try versions().allSatisfy { $0.1 == 2 })
        #expect(try PANKeyRotation.run(database: app.pool, vault: vault, actor: "cli:test").resealed == 0)

        // Every PAN opens under the new key, and the fingerprint (version 1) still finds it.
        for serial in 1...5 {
            let record = try #require(
                try app.pool.withConnection { try CardStore.find("card-\(serial)", connection: $0) })
            #expect(try CardStore.openPAN(record, vault: vault).unsafeDigits == AdminFixtures.pan(serial: serial))
            let pan = try #require(PrimaryAccountNumber(AdminFixtures.pan(serial: serial)))
            #expect(
                try app.pool.withConnection { try CardStore.find(pan: pan, vault: vault, connection: $0) }?.cardID
                    == "card-\(serial)")
        }
        let batches = try app.pool.withConnection {
            try $0.query("SELECT count(*) AS n FROM audit_log WHERE action = 'keys.rotated'").first!.decode(
                "n", as: Int64.self)
        }
        #expect(batches == 3)
        #expect(try AuditChainCheck.verify(database: app.pool).isIntact)

        // A ring without the version a card is sealed under is refused by name, nothing half done.
        let onlyV3 = try OperatorSettings.vault(
            ConfigurationReader(["ISSUERD_MASTER_KEY": Self.masterKeyV1, "ISSUERD_MASTER_KEY_VERSION": "3"]))
        #expect(throws: CommandInputError.self) {
            try PANKeyRotation.run(database: app.pool, vault: onlyV3, actor: "cli:test")
        }
        #expect(try versions().allSatisfy { $0.1 == 2 })
    }

    @Test("keys rotate and dev token through the executable")
    func rotateAndTokenCommands() throws {
        let app = try TestApplication()
        try AdminFixtures.registerCard(
            app, adminKey: try app.apiKey(role: .admin), customer: "cust-1", card: "card-1", serial: 9)
        let rotated = try CommandLineRunner.run(
            ["keys", "rotate", "--batch-size", "10"],
            environment: [
                "ISSUERD_DATABASE_URL": app.serviceConnectionString, "ISSUERD_MASTER_KEY": Self.masterKeyV2,
                "ISSUERD_MASTER_KEY_VERSION": "2", "ISSUERD_MASTER_KEY_PREVIOUS": "1:\(Self.masterKeyV1)",
            ])
        #expect(rotated.status == 0, "\(rotated.standardError)")
        #expect(rotated.standardOutput.contains("re-sealed 1 card(s)"))

        // The token carries what the server is configured to require: iat, iss, aud.
        let claims = [
            "ISSUERD_APP_JWT_SECRET": app.appJWTSecret, "ISSUERD_APP_JWT_ISSUER": "https://login.example-bank.com",
            "ISSUERD_APP_JWT_AUDIENCE": "issuerd",
        ]
        let token = try CommandLineRunner.run(
            ["dev", "token", "--customer", "cust-1", "--ttl", "5m"], environment: claims)
        #expect(token.status == 0)
        let jwt = try #require(token.lastLine)
        let verifier = try AppTokenVerifier(AppJWTSetting(ConfigurationReader(claims)))
        let request = HTTPRequest(method: .get, path: "/v1/cards", headers: ["Authorization": "Bearer \(jwt)"])
        #expect(try verifier.customerID(for: request, now: Date()) == "cust-1")
        #expect(throws: (any Error).self) { try verifier.customerID(for: request, now: Date().addingTimeInterval(400)) }
        // Without --ttl: the longest lifetime the server accepts; longer is refused before minting.
        let longest = try CommandLineRunner.run(["dev", "token", "--customer", "cust-1"], environment: claims)
        let longestLine = try #require(longest.lastLine)
        let longestJWT = try #require(JWT(compact: longestLine))
        #expect(longestJWT.expiresAt.map { $0 - (longestJWT.issuedAt ?? 0) } == 3600)
        let tooLong = try CommandLineRunner.run(
            ["dev", "token", "--customer", "c", "--ttl", "2h"], environment: claims)
        #expect(tooLong.status == 1)
        #expect(tooLong.standardError.contains("ISSUERD_APP_JWT_MAX_LIFETIME"))
        let noSecret = try CommandLineRunner.run(["dev", "token", "--customer", "c"], environment: [:])
        #expect(noSecret.status == 1)
        #expect(noSecret.standardError.contains("ISSUERD_APP_JWT_SECRET"))
    }
}
