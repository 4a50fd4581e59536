/// A failure reported by PostgreSQL, by libpq, or by this module while binding or decoding.
///
/// ``description`` is safe to log: it never contains a bound parameter value or the server's
/// `DETAIL` (which quotes row values, e.g. `Key (pan)=(4111…) already exists`), and quoted
/// input in data-exception messages (SQLSTATE class 22) is masked.
public struct PostgresError: Error, CustomStringConvertible, Sendable {
    /// What kind of failure this is; an open set so new kinds do not break callers' switches.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// A short stable name, e.g. `uniqueViolation`.
        public let name: String

        /// Creates a code; prefer the static members.
        public init(_ name: String) { self.name = name }

        public var description: String { name }

        /// The server is unreachable: connection refused, lost, timed out, or shutting down.
        public static let unavailable = Code("unavailable")
        /// No pooled connection became free within the pool's acquire timeout.
        public static let poolTimeout = Code("poolTimeout")
        /// The server did not answer a statement within the connection's client-side deadline
        /// (``PostgresConnection/statementTimeout``): the statement was abandoned and its
        /// connection closed. It may still have committed (a frozen server resumes what it
        /// had received); an idempotent retry finds out.
        public static let timedOut = Code("timedOut")
        /// SQLSTATE class 53 but 53300: the server is short of disk (53100), memory (53200) or
        /// another resource. The connection stays sound; what failed was not written.
        public static let insufficientResources = Code("insufficientResources")
        /// SQLSTATE 23505.
        public static let uniqueViolation = Code("uniqueViolation")
        /// SQLSTATE 23503.
        public static let foreignKeyViolation = Code("foreignKeyViolation")
        /// SQLSTATE 23514.
        public static let checkViolation = Code("checkViolation")
        /// SQLSTATE 23502.
        public static let notNullViolation = Code("notNullViolation")
        /// SQLSTATE 40001: retry the whole transaction.
        public static let serializationFailure = Code("serializationFailure")
        /// SQLSTATE 40P01: retry the whole transaction.
        public static let deadlockDetected = Code("deadlockDetected")
        /// SQLSTATE 57014: statement timeout or cancel request.
        public static let queryCanceled = Code("queryCanceled")
        /// A column could not be decoded as the requested Swift type (or was NULL).
        public static let decoding = Code("decoding")
        /// SQLSTATE class 42: syntax error or access rule violation (undefined table, …).
        public static let syntax = Code("syntax")
        /// A parameter cannot be sent (text with a NUL byte, too many parameters).
        public static let invalidParameter = Code("invalidParameter")
        /// A migration file is malformed, changed after it was applied, or missing.
        public static let migration = Code("migration")
        /// Any other failure; look at ``PostgresError/sqlState``.
        public static let other = Code("other")
    }

    /// The kind of failure.
    public var code: Code
    /// The five-character SQLSTATE when the server reported one.
    public var sqlState: String?
    /// The primary message, safe to log (see the type's documentation).
    public var message: String
    /// The server's `DETAIL` field. It may quote row values (PANs included): never log it.
    public var detail: String?
    /// The violated constraint's name, for integrity violations.
    public var constraint: String?
    /// The server's `CONTEXT` field (where the statement was: `COPY cards, line 12: …`). Like
    /// ``detail`` it may quote row values: never log it; ``copyLine`` reads what is safe.
    public var context: String?
    /// Where in issuerd the error was raised.
    public var file: String
    /// The line in ``file``.
    public var line: Int

    /// Creates an error.
    public init(
        code: Code, sqlState: String? = nil, message: String, detail: String? = nil, constraint: String? = nil,
        context: String? = nil, file: String = #fileID, line: Int = #line
    ) {
        self.code = code
        self.sqlState = sqlState
        self.message = message
        self.detail = detail
        self.constraint = constraint
        self.context = context
        self.file = file
        self.line = line
    }

    public var description: String {
        var text = "PostgresError.\(code)"
        if let sqlState { text += " (SQLSTATE \(sqlState))" }
        text += ": \(message)"
        if let constraint { text += " [constraint \(constraint)]" }
        return text + " at \(file):\(line)"
    }

    /// For a row a `COPY … FROM STDIN` refused: its 1-based line in the COPY's data, read from
    /// ``context``; nil for any other failure.
    ///
    /// The server words the context `COPY <table>, line <n>` followed by the column or the row's
    /// text; translations keep `COPY <table>, ` and the number, so the first number after the
    /// table's name is read (a table's name may itself hold digits, a row's text comes after).
    public var copyLine: Int? {
        guard let context else { return nil }
        for text in context.split(separator: "\n") where text.hasPrefix("COPY ") {
            guard let comma = text.firstIndex(of: ",") else { continue }
            let digits = text[text.index(after: comma)...].drop { !$0.isASCII || !$0.isNumber }.prefix {
                $0.isASCII && $0.isNumber
            }
            if let number = Int(digits) { return number }
        }
        return nil
    }

    /// True when the failure means the connection it happened on can no longer be used.
    public var isConnectionLost: Bool { code == .unavailable || code == .timedOut }

    /// True for SQLSTATE 0A000 as a prepared statement gets it when a schema change (a
    /// migration applied while this process runs) altered the shape of its result: "cached plan
    /// must not change result type". Preparing the statement again resolves it.
    public var isInvalidatedPlan: Bool { sqlState == "0A000" }

    /// True for failures that a fresh attempt of the whole transaction may not repeat.
    public var isTransient: Bool { code == .serializationFailure || code == .deadlockDetected }
}

extension PostgresError {
    /// Maps a SQLSTATE to a code (PostgreSQL manual, appendix A).
    ///
    /// - Parameter sqlState: Five characters, e.g. `23505`.
    /// - Returns: The matching code, ``Code/other`` when none does.
    public static func code(forSQLState sqlState: String) -> Code {
        switch sqlState {
        case "23505": return .uniqueViolation
        case "23503": return .foreignKeyViolation
        case "23514": return .checkViolation
        case "23502": return .notNullViolation
        case "40001": return .serializationFailure
        case "40P01": return .deadlockDetected
        case "57014": return .queryCanceled
        // admin_shutdown, crash_shutdown, cannot_connect_now, too_many_connections: the server
        // is going away or refusing us, which callers treat like an outage.
        case "57P01", "57P02", "57P03", "53300": return .unavailable
        default: break
        }
        if sqlState.hasPrefix("08") { return .unavailable }
        if sqlState.hasPrefix("53") { return .insufficientResources }
        if sqlState.hasPrefix("42") { return .syntax }
        return .other
    }

    /// Masks double-quoted input in data-exception messages, which PostgreSQL copies from the
    /// offending value (`invalid input syntax for type uuid: "…"`).
    static func safeMessage(_ message: String, sqlState: String?) -> String {
        guard let sqlState, sqlState.hasPrefix("22") else { return message }
        var result = ""
        var inQuotes = false
        for character in message {
            if character == "\"" {
                result.append(character)
                if !inQuotes { result += "****" }
                inQuotes.toggle()
            } else if !inQuotes {
                result.append(character)
            }
        }
        return result
    }
}

extension PostgresError {
    /// A statement inside a transaction failed, so the server ended it without committing:
    /// nothing of it is kept, and nothing more runs in it.
    static func rolledBackByFailedStatement(file: String = #fileID, line: Int = #line) -> PostgresError {
        PostgresError(
            code: .other, message: "transaction was rolled back because a statement inside it failed", file: file,
            line: line)
    }
}

extension PostgresError {
    /// True when a hot standby cancelled the statement, or ended the session, because replaying
    /// the primary's changes needed what it held (a recovery conflict: rows a vacuum removed, a
    /// lock a DDL took, a dropped database). PostgreSQL reports the cancellation as SQLSTATE
    /// 40001 (40P01 when the replay would deadlock with it, 57P04 for a dropped database), the
    /// same codes as a serialization failure and a deadlock: a read-only statement on a standby
    /// meets those only through such a conflict. A fresh attempt usually succeeds.
    public var isRecoveryConflict: Bool { sqlState == "40001" || sqlState == "40P01" || sqlState == "57P04" }
}
