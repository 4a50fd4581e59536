import IssuerdAPI
import IssuerdCore

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

        let configuration: IssuerdConfiguration
        do {
            configuration = try IssuerdConfiguration(ConfigurationReader.layered(file: arguments.option("config")))
        } catch let error as ConfigurationError {
            throw CommandFailure(error.description)
        }
        let logger = Logger(label: "issuerd", minimumLevel: configuration.logLevel)
        let application: IssuerdApplication
        do {
            application = try IssuerdApplication(configuration: configuration, logger: logger)
            try application.start()
        } catch let error as ConfigurationError {
            throw CommandFailure(error.description)
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
