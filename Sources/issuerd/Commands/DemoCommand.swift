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
        issuerd demo [--url URL] [--admin-key-file FILE] [--pki DIR]

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
        `scripts/run` sets all of this up; run the demo from the project root with
        (set -a; source .local/dev.env; .build/release/issuerd demo).
        Exit 0 when every case came out as expected, 1 otherwise.
        """

    static func run(_ words: [String]) throws -> Int32 {
        let arguments = try Arguments(words, options: ["url", "admin-key-file", "pki"])
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

        let demo = DemoRun(
            http: DemoHTTP(baseURL: url), adminKey: adminKey, jwtSecret: jwtSecret,
            jwtIssuer: environment["ISSUERD_APP_JWT_ISSUER"], jwtAudience: environment["ISSUERD_APP_JWT_AUDIENCE"],
            tspSecret: tspSecret,
            certificates: [leaf.base64EncodedString(), intermediate.base64EncodedString()],
            leafKey: try P256.KeyAgreement.PrivateKey(pemRepresentation: leafKeyPEM))
        return try demo.run() ? 0 : 1
    }
}
