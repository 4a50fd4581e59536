import Foundation
import IssuerdAPI
import IssuerdCore
import IssuerdPostgres

/// What the operator commands (`apikey`, `cards`, `audit`, `keys`, `dev token`) share: reading
/// only their own settings, one clear line for a missing one, the audit actor, a small pool.
enum OperatorCommandSupport {
    /// The environment layered over `--config FILE`.
    static func reader(_ arguments: Arguments) throws -> ConfigurationReader {
        try setting { try ConfigurationReader.layered(file: arguments.option("config")) }
    }

    /// Runs a settings read, turning ``ConfigurationError`` into the one line the command prints.
    static func setting<T>(_ read: () throws -> T) throws -> T {
        do {
            return try read()
        } catch let error as ConfigurationError {
            throw CommandFailure(error.description)
        }
    }

    /// A one-connection (or `size`) pool on `ISSUERD_DATABASE_URL`.
    static func pool(_ reader: ConfigurationReader, size: Int = 1) throws -> PostgresPool {
        let url = try setting { try OperatorSettings.databaseURL(reader) }
        let logger = Logger(label: "issuerd.cli", minimumLevel: .warning, handler: JSONLogHandler.standardError)
        return OperatorSettings.pool(url, size: size, logger: logger)
    }

    /// `cli:<login>`: who ran the command, as the audit log records it (bounded, safe characters).
    static var actor: String {
        let login =
            ProcessInfo.processInfo.environment["USER"] ?? ProcessInfo.processInfo.environment["LOGNAME"] ?? "unknown"
        let safe = login.unicodeScalars.filter {
            $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "._-".unicodeScalars.contains($0))
        }
        return "cli:" + String(String.UnicodeScalarView(safe.prefix(32)))
    }

    /// Maps the errors every operator command may meet to one printed line.
    static func failing<T>(_ work: () throws -> T) throws -> T {
        do {
            return try work()
        } catch let error as CommandInputError {
            throw CommandFailure(error.description)
        } catch let error as ConfigurationError {
            throw CommandFailure(error.description)
        } catch let error as PostgresError {
            throw CommandFailure("database: " + error.message + (error.sqlState.map { " (SQLSTATE \($0))" } ?? ""))
        }
    }
}
