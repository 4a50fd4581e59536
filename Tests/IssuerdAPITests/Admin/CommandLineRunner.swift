import Foundation
import IssuerdTestSupport

/// Runs the built `issuerd` executable, as an operator would, and captures what it prints.
enum CommandLineRunner {
    struct Result {
        var status: Int32
        var standardOutput: String
        var standardError: String
        var lastLine: String? { standardOutput.split(separator: "\n").last.map(String.init) }
    }

    /// `swift build` / `swift test` put the executable here; a missing one fails the test with the fix.
    static var executable: URL {
        TestApplication.repositoryRoot.appendingPathComponent(".build/debug/issuerd")
    }

    static func run(_ arguments: [String], environment: [String: String], input: String? = nil) throws -> Result {
        guard FileManager.default.isExecutableFile(atPath: executable.path) else {
            throw TestEnvironmentError(
                "\(executable.path) is missing: build it with `swift build --product issuerd` (swift test builds it too)"
            )
        }
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        var env = ["PATH": "/usr/bin:/bin", "USER": "tester"]
        env.merge(environment) { _, new in new }
        process.environment = env
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        let stdin = Pipe()
        if input != nil { process.standardInput = stdin }
        try process.run()
        if let input {
            stdin.fileHandleForWriting.write(Data(input.utf8))
            try stdin.fileHandleForWriting.close()
        }
        // Read before waiting so a full pipe cannot block the child.
        let outData = output.fileHandleForReading.readDataToEndOfFile()
        let errData = error.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus, standardOutput: String(decoding: outData, as: UTF8.self),
            standardError: String(decoding: errData, as: UTF8.self))
    }
}
