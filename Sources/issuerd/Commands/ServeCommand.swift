import IssuerdAPI
import IssuerdCore
import IssuerdPostgres

/// `issuerd serve`: the HTTP service in the foreground.
enum ServeCommand: CommandDefinition {
    static let name = "serve"
    static let summary = "run the HTTP service (SIGTERM/SIGINT stop it gracefully, SIGHUP reloads rules)"
    static let usage = """
        issuerd serve [--config FILE]

        Reads its settings from the environment (docs/configuration.md), layered over FILE when
        given (KEY=VALUE lines; the environment wins). Applies pending migrations unless
        ISSUERD_MIGRATE_ON_START=false, loads the rules, and listens on ISSUERD_LISTEN
        (default 127.0.0.1:8080). Logs are JSON lines on standard output.

        Exit statuses: 0 after SIGTERM or SIGINT; 78 for a wrong or missing setting (a refused
        HSM PIN or a locked token included), which a restart cannot fix; 69 when the database
        is unavailable at start; 1 for any other failure. An ISSUERD_* variable that no setting
        reads is named in a warning at start, with the setting it most likely meant.

        Signals: SIGTERM or SIGINT stop accepting, let in-flight requests finish (at most 5 s)
        and exit 0; SIGHUP reloads the rules (a bad ruleset keeps the last good one serving).
        """

    static func run(_ words: [String]) throws -> Int32 {
        let arguments = try Arguments(words, options: ["config"])
        if arguments.wantsHelp {
            print(usage)
            return 0
        }
        guard arguments.positionals.isEmpty else { throw UsageError("unexpected argument \(arguments.positionals[0])") }

        // Before any other thread exists, so that every worker inherits the blocked mask and
        // the signals arrive here, through sigwait, as ordinary values.
        let signals = try TerminationSignals.block()

        var configuration: IssuerdConfiguration
        let reader: ConfigurationReader
        do {
            reader = try ConfigurationReader.layered(file: arguments.option("config"))
            configuration = try IssuerdConfiguration(reader)
            configuration.build = CommandLineTool.build
        } catch let error as ConfigurationError {
            throw CommandFailure(error.description, status: ExitStatus.configuration)
        }
        let logger = Logger(label: "issuerd", minimumLevel: configuration.logLevel)
        for unknown in reader.unknownSettings {
            logger.warning(
                "\(unknown.name) is not a setting and is ignored (did you mean \(unknown.closest)?)",
                ["setting": .string(unknown.name), "closest": .string(unknown.closest)])
        }
        let application: IssuerdApplication
        do {
            application = try IssuerdApplication(configuration: configuration, logger: logger)
            try application.start()
        } catch let error as ConfigurationError {
            // A refused or locked HSM PIN is one too: retrying it would lock the partition.
            throw CommandFailure(error.description, status: ExitStatus.configuration)
        } catch let error as PostgresError where error.isConnectionLost || error.code == .poolTimeout {
            logger.critical("start-up failed: the database is unavailable", ["error": "\(error)"])
            throw CommandFailure(
                "start-up failed: the database is unavailable: \(error)", status: ExitStatus.unavailable)
        } catch {
            logger.critical("start-up failed", ["error": "\(error)"])
            throw CommandFailure("start-up failed: \(error)")
        }

        while true {
            let signal = signals.wait()
            logger.info("signal received", ["signal": "\(signal)"])
            switch signal {
            case .hangup:
                application.reload()
            case .interrupt, .terminate:
                application.shutdown(timeout: .seconds(5))
                return 0
            }
        }
    }
}
