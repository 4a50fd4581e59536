/// A failure inside the outbox machinery. `description` is safe to log and to store as a
/// message's `last_error`: it never holds a code, a destination or a secret.
struct OutboxError: Error, CustomStringConvertible, Sendable {
    /// A stable identifier of the failure, open for new values.
    struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        var rawValue: String
        init(rawValue: String) { self.rawValue = rawValue }
        var description: String { rawValue }

        /// A payload that does not decode or open.
        static let unreadablePayload = Code(rawValue: "unreadable_payload")
        /// The receiver could not be reached or timed out.
        static let transport = Code(rawValue: "transport")
        /// The receiver answered with a non-2xx status.
        static let rejected = Code(rawValue: "rejected")
        /// The `log` provider could not append to its file.
        static let logFile = Code(rawValue: "log_file")
    }

    let code: Code
    let message: String
    let file: String
    let line: Int

    init(_ code: Code, _ message: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.message = message
        self.file = file
        self.line = line
    }

    var description: String { "\(code): \(message)" }
}
