import Foundation
import IssuerdAPI

/// `issuerd keys rotate`: re-seals card PANs under the current master key version.
enum KeysCommand: CommandDefinition {
    static let name = "keys"
    static let summary = "re-seal card PANs under the current key (keys rotate); keys in an HSM (keys hsm)"
    static let usage = """
        issuerd keys rotate [--batch-size N] [--config FILE]
        issuerd keys hsm init|status|add-data-key …   (issuerd keys hsm --help)

        Re-encrypts every card whose PAN is sealed under a master key version other than the
        current one (ISSUERD_MASTER_KEY_VERSION), in batches of N (default 500), each batch one
        transaction taking its rows with FOR UPDATE SKIP LOCKED, so the service keeps running.
        Every batch is audited; progress goes to standard error. Running it again does nothing.

        Before running: set the new key as ISSUERD_MASTER_KEY with a higher
        ISSUERD_MASTER_KEY_VERSION, list the old one in ISSUERD_MASTER_KEY_PREVIOUS
        (version:base64), and restart the service with the same settings. Keep the lowest
        version configured afterwards: it keys the PAN fingerprints (docs/runbook.md).
        With an HSM (ISSUERD_PKCS11_MODULE): run issuerd keys hsm add-data-key instead, restart,
        then keys rotate; the current version is the highest stored data key.

        Environment: ISSUERD_DATABASE_URL, ISSUERD_MASTER_KEY, ISSUERD_MASTER_KEY_VERSION,
        ISSUERD_MASTER_KEY_PREVIOUS, ISSUERD_PKCS11_* (docs/configuration.md)
        """

    static func run(_ words: [String]) throws -> Int32 {
        try runSubcommand(words, ["rotate": rotate, "hsm": KeysHSMCommand.run])
    }

    private static func rotate(_ words: [String]) throws -> Int32 {
        let arguments = try Arguments(words, options: ["batch-size", "config"])
        if arguments.wantsHelp {
            print(usage)
            return 0
        }
        if let extra = arguments.positionals.first { throw UsageError("unexpected argument '\(extra)'") }
        var batchSize = 500
        if let text = arguments.option("batch-size") {
            guard let value = Int(text), (1...10_000).contains(value) else {
                throw UsageError("--batch-size must be 1 to 10000")
            }
            batchSize = value
        }
        let reader = try OperatorCommandSupport.reader(arguments)
        let vault = try OperatorCommandSupport.setting { try OperatorSettings.vault(reader) }
        let pool = try OperatorCommandSupport.pool(reader)
        defer { pool.close() }
        let summary = try OperatorCommandSupport.failing {
            try PANKeyRotation.run(
                database: pool, vault: vault, actor: OperatorCommandSupport.actor, batchSize: batchSize,
                progress: { standardError("keys rotate: \($0) cards re-sealed") })
        }
        print(
            "re-sealed \(summary.resealed) card(s) in \(summary.batches) batch(es); every card is under key version \(summary.currentVersion)"
        )
        return 0
    }
}
