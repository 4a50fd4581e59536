import Foundation

/// A command-line tool run to completion by a test: the independent oracles (Python
/// `cryptography`, `openssl`) that check what issuerd produced.
public enum ExternalProcess {
    /// What a run left behind.
    public struct Output: Sendable {
        /// The exit status.
        public let status: Int32
        /// Everything written to standard output.
        public let stdout: Data
        /// Standard error as text.
        public let stderr: String
    }

    /// Runs `executable` with `arguments`, feeding `input` on stdin, and waits for it.
    public static func run(_ executable: String, _ arguments: [String], input: Data = Data()) throws -> Output {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let stdin = Pipe()
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        stdin.fileHandleForWriting.write(input)
        try stdin.fileHandleForWriting.close()
        let out = stdout.fileHandleForReading.readDataToEndOfFile()
        let err = stderr.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Output(status: process.terminationStatus, stdout: out, stderr: String(decoding: err, as: UTF8.self))
    }
}
