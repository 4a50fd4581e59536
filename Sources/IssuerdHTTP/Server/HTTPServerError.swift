/// Why the HTTP server could not be configured or started.
///
/// The message names the setting or system call that failed and the `errno` text; it never
/// holds anything secret, so it may be printed as the one line a failed start-up shows.
public struct HTTPServerError: Error, Sendable, CustomStringConvertible {
    /// A stable reason; extend with static members.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code's name.
        public var rawValue: String
        /// Creates a code.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The code's name.
        public var description: String { rawValue }

        /// The listen address is not `host:port`.
        public static let invalidListenAddress = Code(rawValue: "invalid_listen_address")
        /// A configuration value is out of range.
        public static let invalidConfiguration = Code(rawValue: "invalid_configuration")
        /// `socket`, `bind` or `listen` failed.
        public static let socketFailed = Code(rawValue: "socket_failed")
        /// libmicrohttpd refused to start.
        public static let daemonFailed = Code(rawValue: "daemon_failed")
        /// `start()` was called on a server that already started or shut down.
        public static let invalidState = Code(rawValue: "invalid_state")
    }

    /// The reason.
    public var code: Code
    /// A sentence safe to print.
    public var message: String
    /// Where the error was made.
    public var file: String
    /// Where the error was made.
    public var line: Int

    /// Creates an error.
    public init(_ code: Code, _ message: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.message = message
        self.file = file
        self.line = line
    }

    /// The message, prefixed by the code.
    public var description: String { "\(code): \(message)" }
}
