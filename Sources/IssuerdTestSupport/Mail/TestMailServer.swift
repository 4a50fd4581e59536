import Foundation

/// A real SMTP server on loopback (Mail/smtp_server.py, aiosmtpd) for the e-mail tests:
/// STARTTLS and AUTH required, a certificate from a CA made for this run (``caFile``). It
/// keeps each accepted message as a file, and answers RCPT with ``answer(_:)``'s reply when
/// one is set.
public final class TestMailServer: @unchecked Sendable {  // immutable after init; the child is stopped in deinit
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("smtp_server.py").path

    /// The AUTH user and password it accepts.
    public let user = "issuerd-mail"
    public let password = "mail-password-0f3c9a"
    public let port: Int
    public let directory: URL
    private let process = Process()
    private let input = Pipe()

    /// `smtp://localhost:PORT`.
    public var url: String { "smtp://localhost:\(port)" }
    /// The CA that signed the server's certificate (for `ISSUERD_SMTP_CA_FILE`).
    public var caFile: String { directory.appendingPathComponent("ca.pem").path }

    /// One accepted message.
    public struct Mail: Sendable {
        /// The bytes as received.
        public let raw: String
        /// Whether the session was under TLS when the message came.
        public let tls: Bool
        /// The AUTH user of the session ("" without AUTH).
        public let login: String
        public let rcptTos: [String]

        /// The value of the first header `name` (continuation lines unfolded).
        public func header(_ name: String) -> String? {
            let head = raw.components(separatedBy: "\r\n\r\n").first ?? ""
            var value: String?
            for line in head.components(separatedBy: "\r\n") {
                if value != nil, line.hasPrefix(" ") || line.hasPrefix("\t") {
                    value! += " " + line.trimmingCharacters(in: .whitespaces)
                } else if value != nil {
                    break
                } else if line.lowercased().hasPrefix(name.lowercased() + ":") {
                    value = String(line.dropFirst(name.count + 1)).trimmingCharacters(in: .whitespaces)
                }
            }
            return value
        }

        /// The body, base64-decoded when the message says it is base64.
        public var body: String {
            let parts = raw.components(separatedBy: "\r\n\r\n")
            let text = parts.dropFirst().joined(separator: "\r\n\r\n")
            guard header("Content-Transfer-Encoding")?.lowercased() == "base64",
                let data = Data(base64Encoded: text.replacingOccurrences(of: "\r\n", with: ""))
            else { return text }
            return String(decoding: data, as: UTF8.self)
        }
    }

    /// Starts the server.
    ///
    /// - Throws: ``TestEnvironmentError`` without the test venv's Python (`ISSUERD_TEST_PYTHON`,
    ///   which scripts/test sets) or when the server does not start.
    public init() throws {
        guard let python = ProcessInfo.processInfo.environment["ISSUERD_TEST_PYTHON"], !python.isEmpty else {
            throw TestEnvironmentError("ISSUERD_TEST_PYTHON is not set: run the tests through scripts/test (aiosmtpd)")
        }
        directory = try TestScratch.directory("smtp")
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [Self.script, directory.path, user, password]
        process.standardInput = input
        process.standardOutput = output
        // Its complaints (a test's handshake refused on purpose) go to a file beside the mail.
        let log = directory.appendingPathComponent("server.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        process.standardError = try FileHandle(forWritingTo: log)
        try process.run()
        var line: [UInt8] = []
        while !line.contains(0x0A) {
            let chunk = output.fileHandleForReading.availableData
            guard !chunk.isEmpty else { break }
            line += chunk
        }
        guard let port = Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
        else {
            process.terminate()
            throw TestEnvironmentError("smtp_server.py did not start")
        }
        self.port = port
    }

    deinit {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }

    /// From now on RCPT is answered with `reply` (such as `451 4.3.0 Try again later`), or
    /// accepted again when nil.
    public func answer(_ reply: String?) throws {
        let file = directory.appendingPathComponent("answer")
        if let reply { try Data(reply.utf8).write(to: file) } else { try? FileManager.default.removeItem(at: file) }
    }

    /// The messages accepted so far, oldest first.
    public var mails: [Mail] {
        var result: [Mail] = []
        var index = 1
        while let raw = try? Data(contentsOf: directory.appendingPathComponent("mail-\(index).eml")) {
            let meta =
                (try? Data(contentsOf: directory.appendingPathComponent("mail-\(index).json")))
                .flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] } ?? [:]
            result.append(
                Mail(
                    raw: String(decoding: raw, as: UTF8.self), tls: meta["tls"] as? Bool ?? false,
                    login: meta["login"] as? String ?? "", rcptTos: meta["rcptTos"] as? [String] ?? []))
            index += 1
        }
        return result
    }

    /// Waits (at most `timeout` seconds) until `count` messages have arrived, and returns them.
    @discardableResult
    public func wait(for count: Int, timeout: Double = 20) -> [Mail] {
        let deadline = Date().addingTimeInterval(timeout)
        var mails = self.mails
        while mails.count < count && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.02)
            mails = self.mails
        }
        return mails
    }
}
