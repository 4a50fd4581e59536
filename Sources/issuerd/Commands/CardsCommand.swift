import Foundation
import IssuerdAPI

/// `issuerd cards import FILE.jsonl`: bulk card registration, all or nothing.
enum CardsCommand: CommandDefinition {
    static let name = "cards"
    static let summary = "bulk-register cards from a JSON-lines file (cards import FILE.jsonl)"
    static let usage = """
        issuerd cards import FILE.jsonl [--progress-every N] [--config FILE]

        Registers one card per line. Each line is a JSON object shaped like the body of
        POST /v1/admin/cards, plus an optional "customer" object that creates or updates the
        card's customer first:

          {"cardId":"card-1","customerId":"cust-1","accountNumber":"4111111111111111",
           "expiration":"12/29","cardholderName":"KIM MINJI","paymentNetwork":"visa",
           "customer":{"phoneNumber":"010-1234-5678","email":"minji@example.com"}}

        Blank lines and lines starting with # are skipped. The whole file is ONE transaction: the
        first bad record stops the import with its line number and nothing of the file is kept.
        Progress goes to standard error every N cards (default 1000). PANs are never printed.

        Environment: ISSUERD_DATABASE_URL, ISSUERD_MASTER_KEY (+ _VERSION, _PREVIOUS)
        """

    static func run(_ words: [String]) throws -> Int32 {
        guard let sub = words.first, sub != "--help", sub != "-h" else {
            print(usage)
            return words.isEmpty ? 2 : 0
        }
        guard sub == "import" else { throw UsageError("unknown subcommand '\(sub)' (import)") }
        let arguments = try Arguments(Array(words.dropFirst()), options: ["progress-every", "config"])
        if arguments.wantsHelp {
            print(usage)
            return 0
        }
        guard arguments.positionals.count == 1, let path = arguments.positionals.first else {
            throw UsageError("expected exactly one FILE.jsonl")
        }
        var every = 1000
        if let text = arguments.option("progress-every") {
            guard let value = Int(text), value >= 1 else { throw UsageError("--progress-every must be a positive whole number") }
            every = value
        }
        let reader = try OperatorCommandSupport.reader(arguments)
        let vault = try OperatorCommandSupport.setting { try OperatorSettings.vault(reader) }
        let pool = try OperatorCommandSupport.pool(reader)
        defer { pool.close() }
        let summary = try OperatorCommandSupport.failing {
            try CardImport.run(
                file: URL(fileURLWithPath: path), actor: OperatorCommandSupport.actor, now: Date(), vault: vault, database: pool,
                progressEvery: every
            ) { standardError("cards import: \($0) cards") }
        }
        print(
            "imported \(summary.cards) card(s); customers created \(summary.customersCreated), updated \(summary.customersUpdated)")
        return 0
    }
}
