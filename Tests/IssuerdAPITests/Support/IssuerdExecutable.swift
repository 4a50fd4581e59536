import Foundation
import IssuerdTestSupport

/// The built `issuerd` executable that tests run as a child process, as an operator would.
enum IssuerdExecutable {
    /// `ISSUERD_TEST_EXECUTABLE` when set: `scripts/test` sets it to the build under test
    /// (`.build-tsan/debug/issuerd` under `--sanitize thread`, `.build-asan/…` under `address`).
    /// Otherwise the `issuerd` beside this test bundle (`swift test` builds it with the same flags
    /// into the same directory), and last `.build/debug/issuerd`.
    static var path: String {
        if let chosen = ProcessInfo.processInfo.environment["ISSUERD_TEST_EXECUTABLE"], !chosen.isEmpty {
            return chosen
        }
        let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("issuerd").path
        if FileManager.default.isExecutableFile(atPath: beside) { return beside }
        return TestApplication.repositoryRoot.appendingPathComponent(".build/debug/issuerd").path
    }

    /// ``path``, or an error that says how to build it when nothing executable is there.
    static func checkedPath() throws -> String {
        let path = path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw TestEnvironmentError(
                "\(path) is missing: build it with `swift build --product issuerd` (swift test builds it too)")
        }
        return path
    }

    /// `environment` plus this process's sanitizer options. Under `scripts/test --sanitize` the
    /// child is the same sanitized build and needs the same suppressions and symbolizer: without
    /// them it reports what the run suppresses (a system library's leak) and exits non-zero, or
    /// its report's frames stay unsymbolized.
    static func environment(_ environment: [String: String]) -> [String: String] {
        var environment = environment
        for name in ["TSAN_OPTIONS", "ASAN_OPTIONS", "LSAN_OPTIONS"] where environment[name] == nil {
            if let value = ProcessInfo.processInfo.environment[name] { environment[name] = value }
        }
        return environment
    }
}
