import Foundation
import IssuerdAPI
import IssuerdImport
import Synchronization

/// `issuerd cards import FILE.jsonl`: bulk card registration, all or nothing; `issuerd cards
/// reissue FILE.csv`: bulk reissues, a chunk of lines per transaction.
enum CardsCommand: CommandDefinition {
    static let name = "cards"
    static let summary =
        "bulk-register cards from a JSON-lines file (cards import FILE.jsonl), or reissue them from a CSV file (cards reissue FILE.csv)"
    static let usage = """
        issuerd cards import FILE.jsonl [--progress-every N] [--workers N] [--config FILE]
        issuerd cards reissue FILE.csv [--progress-every N] [--config FILE]

        Registers one card per line. Each line is a JSON object shaped like the body of
        POST /v1/admin/cards, plus an optional "customer" object that creates or updates the
        card's customer first:

          {"cardId":"card-1","customerId":"cust-1","accountNumber":"4111111111111111",
           "expiration":"12/29","cardholderName":"KIM MINJI","paymentNetwork":"visa",
           "customer":{"phoneNumber":"010-1234-5678","email":"minji@example.com"}}

        Blank lines and lines starting with # are skipped. The whole file is ONE transaction: the
        first bad record stops the import with its line number and nothing of the file is kept;
        an interrupted import (Ctrl-C, a killed process, a lost connection) keeps nothing either,
        and can simply be run again. The file is streamed (memory stays flat whatever its size),
        validated and sealed on every core, and sent through COPY (new customers through a
        temporary table, so that one created through the API meanwhile is updated instead). --workers N sets the encoding threads (default: one per core).
        Progress goes to standard error every N cards (default 10000), then the phases and the
        peak memory use. PANs are never printed.

        Environment: ISSUERD_DATABASE_URL, ISSUERD_MASTER_KEY (+ _VERSION, _PREVIOUS)
        """ + "\n\n" + reissueUsage

    static let reissueUsage = """
        issuerd cards reissue FILE.csv [--progress-every N] [--config FILE]

        Reissues one card per line, as POST /v1/admin/cards/{cardId}/reissue does (a month's
        renewals, say). The first row names the columns, in any order:

          card_id,reason,expiration,new_card_id,account_number,pan_sequence_number,cardholder_name,apply_at
          card-1,renewal,09/31,,,01,,
          card-2,lost,09/31,card-2b,5399999999990017,,,now

        card_id, reason and expiration are required; reason is renewal, damaged, lost, stolen,
        compromised or product_change (token_fraud names tokens: use the API); account_number is
        the new PAN (lost, stolen and compromised need one); apply_at is activation (the default:
        the tokens move when the new card is set active) or now. Without new_card_id the new card's
        id is derived from card_id and expiration, so running the same file again finds every
        reissue made and changes nothing.

        The file is streamed and applied 500 lines per transaction, each line whole or not at all;
        a bad line is printed as `line N: reason` and the others go on. Progress goes to standard
        error every N lines (default 10000). Ends with
          cards reissue: reissued=N unchanged=N errors=N
        and exits 1 when any line failed. PANs are never printed.

        Environment: ISSUERD_DATABASE_URL, ISSUERD_MASTER_KEY (+ _VERSION, _PREVIOUS),
        ISSUERD_MDES_MASTERCARD_CERT and ISSUERD_TSP_ACCOUNT_CERT (for apply_at now)
        """

    static func run(_ words: [String]) throws -> Int32 {
        try runSubcommand(words, ["import": importFile, "reissue": reissueFile])
    }

    private static func reissueFile(_ words: [String]) throws -> Int32 {
        let arguments = try Arguments(words, options: ["progress-every", "config"])
        if arguments.wantsHelp {
            print(reissueUsage)
            return 0
        }
        guard arguments.positionals.count == 1, let path = arguments.positionals.first else {
            throw UsageError("expected exactly one FILE.csv")
        }
        let every = try progressEvery(arguments)
        let reader = try OperatorCommandSupport.reader(arguments)
        let vault = try OperatorCommandSupport.setting { try OperatorSettings.vault(reader) }
        let keys = try OperatorCommandSupport.setting { try ReissueSettings(reader) }
        // Two connections: a chunk is read on one while the chunk before is written on the other.
        let pool = try OperatorCommandSupport.pool(reader, size: 2)
        defer { pool.close() }
        let summary = try OperatorCommandSupport.failing {
            try CardReissueImport.run(
                file: URL(fileURLWithPath: path), actor: OperatorCommandSupport.actor, now: Date(), vault: vault,
                keys: keys, database: pool, progressEvery: every,
                progress: { standardError("cards reissue: \($0) lines") },
                notice: { standardError("cards reissue: \($0)") },
                badLine: { line, reason in print("line \(line): \(reason)") })
        }
        standardError("cards reissue: peak resident memory \(ResourceUsage.peakResidentMebibytes()) MiB")
        print("cards reissue: reissued=\(summary.reissued) unchanged=\(summary.unchanged) errors=\(summary.errors)")
        return summary.errors > 0 ? 1 : 0
    }

    /// `--progress-every N` (a positive whole number; 10,000 lines by default).
    private static func progressEvery(_ arguments: Arguments) throws -> Int {
        guard let text = arguments.option("progress-every") else { return 10000 }
        guard let value = Int(text), value >= 1 else {
            throw UsageError("--progress-every must be a positive whole number")
        }
        return value
    }

    private static func importFile(_ words: [String]) throws -> Int32 {
        let arguments = try Arguments(words, options: ["progress-every", "workers", "config"])
        if arguments.wantsHelp {
            print(usage)
            return 0
        }
        guard arguments.positionals.count == 1, let path = arguments.positionals.first else {
            throw UsageError("expected exactly one FILE.jsonl")
        }
        let every = try progressEvery(arguments)
        var workers = ProcessInfo.processInfo.activeProcessorCount
        if let text = arguments.option("workers") {
            guard let value = Int(text), (1...256).contains(value) else {
                throw UsageError("--workers must be a whole number from 1 to 256")
            }
            workers = value
        }
        InterruptHandler.install()
        let reader = try OperatorCommandSupport.reader(arguments)
        let vault = try OperatorCommandSupport.setting { try OperatorSettings.vault(reader) }
        let pool = try OperatorCommandSupport.pool(reader)
        defer { pool.close() }
        let summary = try OperatorCommandSupport.failing {
            try CardImport.run(
                file: URL(fileURLWithPath: path), actor: OperatorCommandSupport.actor, now: Date(), vault: vault,
                database: pool,
                progressEvery: every, workers: workers, progress: { standardError("cards import: \($0) cards") },
                phase: { phase in
                    if phase == CardImport.committingPhase {
                        InterruptHandler.committing.store(true, ordering: .sequentiallyConsistent)
                    }
                    standardError("cards import: \(phase)")
                })
        }
        standardError("cards import: peak resident memory \(ResourceUsage.peakResidentMebibytes()) MiB")
        print(
            "imported \(summary.cards) card(s); customers created \(summary.customersCreated), updated \(summary.customersUpdated)"
        )
        return 0
    }
}

/// Ctrl-C during an import: say so and leave at once. Exiting closes the connection, and the
/// server rolls the open transaction back, so nothing of the file is kept; once the COMMIT is
/// on its way, the server may finish it whatever the client does, and the message says so.
///
/// Installed explicitly because a process started in the background of a non-interactive
/// shell inherits SIGINT as ignored (and some parents start children with it blocked), and an
/// operator's Ctrl-C must still stop the import.
enum InterruptHandler {
    /// Set when the import's COMMIT is about to be sent (read by the handler: lock-free).
    static let committing = Atomic<Bool>(false)

    static func install() {
        // Inherited as blocked, SIGINT would stay pending for ever: unblock it too.
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGINT)
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
        signal(SIGINT) { _ in
            // Only async-signal-safe calls here: write(2) of static bytes, and _exit(2).
            let message: StaticString =
                InterruptHandler.committing.load(ordering: .sequentiallyConsistent)
                ? "\ncards import: interrupted while committing: the import may have been kept; look for its cards.imported audit entry (or count the file's cards) before running it again\n"
                : "\ncards import: interrupted: nothing was imported\n"
            _ = write(2, message.utf8Start, message.utf8CodeUnitCount)
            _exit(130)
        }
    }
}
