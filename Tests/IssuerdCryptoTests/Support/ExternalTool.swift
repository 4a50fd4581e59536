import Foundation
import IssuerdTestSupport
import Testing

/// Runs the independent oracles (Python `cryptography`, the `openssl` CLI) as child processes.
enum ExternalTool {
    typealias Output = ExternalProcess.Output

    /// The Python of the test venv; scripts/test sets `ISSUERD_TEST_PYTHON`.
    static func python() throws -> String {
        guard let path = ProcessInfo.processInfo.environment["ISSUERD_TEST_PYTHON"], !path.isEmpty else {
            throw SetupError(
                "ISSUERD_TEST_PYTHON is not set: run the tests through scripts/test, which creates a venv with Python cryptography"
            )
        }
        return path
    }

    /// Runs `executable` with `arguments`, feeding `input` on stdin.
    static func run(_ executable: String, _ arguments: [String], input: Data = Data()) throws -> Output {
        try ExternalProcess.run(executable, arguments, input: input)
    }

    /// Finds an executable on PATH.
    static func which(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// A fresh temporary directory removed by the caller.
    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("issuerd-crypto-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}

/// A missing test prerequisite: thrown so the test fails with the reason (never skips).
struct SetupError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
