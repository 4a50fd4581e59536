import Foundation
import IssuerdAPI
import IssuerdCore
import IssuerdCrypto

/// `issuerd demo`: walks a running development server through a green, a yellow and an orange
/// add-card case over its public HTTP API, and prints what happened at each step.
enum DemoCommand: CommandDefinition {
    static let name = "demo"
    static let summary = "walk a running server through a green, a yellow and an orange case"
    static let usage = """
        issuerd demo [--url URL] [--admin-key-file FILE] [--pki DIR] [--history DAYS [--per-day N]]

        Talks to a running issuerd (default http://127.0.0.1:8080) as three callers:
          - an operator (admin API key from --admin-key-file, default .local/admin.key, or ISSUERD_ADMIN_KEY)
            creates a demo customer and two cards;
          - the issuer app (a token signed with ISSUERD_APP_JWT_SECRET) pushes card 1 to Wallet with
            the development PKI's certificates (--pki, default .local/pki), and the demo decrypts the
            pass data with the leaf's private key, as Apple would;
          - a token service provider (signing with ISSUERD_TSP_HMAC_SECRET) asks to tokenize card 1
            typed into Wallet with a wallet recommending step-up: yellow, with masked methods;
          - card 2 is reported lost, and its push is declined: orange;
          - the operator records outcomes (the green attempt legitimate, the yellow and the orange one
            fraud) and reads the rules' performance against them: the rules that decided have
            precision and recall, and every run adds to the last 24 hours' figures.
        --history DAYS first writes DAYS days (1 to 90) of past decisions straight into PostgreSQL
        (ISSUERD_DATABASE_URL; N a day, default 2000), on cards, customers and devices of the run's
        own, stamped with the version the server serves: the console's pages and a first backtest
        then have a history to read (the velocity values are counted over it, so a candidate
        that tightens a velocity rule changes flows). It prints a backtest to try.
        `scripts/run` sets all of this up; run the demo from the project root with
        (set -a; source .local/dev.env; .build/release/issuerd demo).
        Exit 0 when every case came out as expected, 1 otherwise.
        """

    static func run(_ words: [String]) throws -> Int32 {
        let arguments = try Arguments(words, options: ["url", "admin-key-file", "pki", "history", "per-day"])
        if arguments.wantsHelp {
            print(usage)
            return 0
        }
        let environment = ProcessInfo.processInfo.environment
        guard let url = URL(string: arguments.option("url") ?? "http://127.0.0.1:8080") else {
            throw UsageError("--url is not a URL")
        }
        let adminKey: String
        if let key = environment["ISSUERD_ADMIN_KEY"], !key.isEmpty {
            adminKey = key
        } else {
            let file = arguments.option("admin-key-file") ?? ".local/admin.key"
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
                throw CommandFailure(
                    "no admin key: set ISSUERD_ADMIN_KEY or pass --admin-key-file (scripts/run writes .local/admin.key)"
                )
            }
            adminKey = text.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        guard let jwtSecret = environment["ISSUERD_APP_JWT_SECRET"],
            let tspSecret = environment["ISSUERD_TSP_HMAC_SECRET"]
        else {
            throw CommandFailure(
                "ISSUERD_APP_JWT_SECRET and ISSUERD_TSP_HMAC_SECRET must be set (source .local/dev.env)")
        }
        let pki = URL(fileURLWithPath: arguments.option("pki") ?? ".local/pki")
        guard let leaf = try? Data(contentsOf: pki.appendingPathComponent("leaf-ecc.der")),
            let intermediate = try? Data(contentsOf: pki.appendingPathComponent("intermediate.der")),
            let leafKeyPEM = try? String(contentsOf: pki.appendingPathComponent("leaf-ecc-key.pem"), encoding: .utf8)
        else { throw CommandFailure("no development PKI in \(pki.path) (issuerd dev pki --out \(pki.path))") }

        if let text = arguments.option("history") {
            guard let days = Int(text), (1...90).contains(days) else {
                throw UsageError("--history takes 1 to 90 days")
            }
            guard let perDay = Int(arguments.option("per-day") ?? "2000"), (1...100_000).contains(perDay) else {
                throw UsageError("--per-day takes 1 to 100000")
            }
            try seedHistory(days: days, perDay: perDay, http: DemoHTTP(baseURL: url), adminKey: adminKey)
        } else if arguments.option("per-day") != nil {
            throw UsageError("--per-day goes with --history")
        }
        let demo = DemoRun(
            http: DemoHTTP(baseURL: url), adminKey: adminKey, jwtSecret: jwtSecret,
            jwtIssuer: environment["ISSUERD_APP_JWT_ISSUER"], jwtAudience: environment["ISSUERD_APP_JWT_AUDIENCE"],
            tspSecret: tspSecret,
            certificates: [leaf.base64EncodedString(), intermediate.base64EncodedString()],
            leafKey: try P256.KeyAgreement.PrivateKey(pemRepresentation: leafKeyPEM))
        return try demo.run() ? 0 : 1
    }

    /// `--history`: the past decisions, stamped with the serving version, and a backtest to try.
    private static func seedHistory(days: Int, perDay: Int, http: DemoHTTP, adminKey: String) throws {
        let rules = try http.send("GET", "/v1/admin/rules", headers: ["Authorization": "Bearer \(adminKey)"])
        guard rules.status == 200, let version = rules.json?["version"] as? String else {
            throw CommandFailure("GET /v1/admin/rules: HTTP \(rules.status): \(rules.text.prefix(300))")
        }
        let prefix = "demo-" + BinaryEncoding.hexString(try SecureRandom.bytes(count: 3))
        let pool = try RulesHistoryCommands.openDatabase()
        defer { pool.close() }
        print("== HISTORY: \(days) days of past decisions, \(perDay) a day, as version \(version)")
        let written = try RulesHistoryCommands.databaseCall {
            try DemoHistory.seed(days: days, perDay: perDay, version: version, prefix: prefix, database: pool)
        }
        let formatter = ISO8601DateFormatter()
        let now = Date()
        print(
            "   wrote \(written) attempts (ids \(prefix)-…) from \(formatter.string(from: now.addingTimeInterval(-Double(days) * 86_400)))"
        )
        print(
            "   try a backtest: copy rules/ to my-rules/, change velocity.card_attempts to attempts(card, 72h) >= 1, then"
        )
        print(
            "   issuerd rules backtest --candidate my-rules --since \(formatter.string(from: now.addingTimeInterval(-86_400))) --until \(formatter.string(from: now))"
        )
    }
}
