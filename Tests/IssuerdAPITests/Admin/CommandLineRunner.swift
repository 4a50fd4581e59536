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

    /// The build under test (``IssuerdExecutable``); a missing one fails the test with the fix.
    static var executable: URL { URL(fileURLWithPath: IssuerdExecutable.path) }

    static func run(_ arguments: [String], environment: [String: String], input: String? = nil) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try IssuerdExecutable.checkedPath())
        process.arguments = arguments
        var env = ["PATH": "/usr/bin:/bin", "USER": "tester"]
        env.merge(environment) { _, new in new }
        process.environment = IssuerdExecutable.environment(env)
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
