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
    ///
    /// With `ISSUERD_TEST_SANITIZER_LOGS` set (`scripts/test` sets it in a sanitizer run), the
    /// child writes its reports to `issuerd.<pid>` in that directory (the sanitizers' `log_path`)
    /// instead of its standard error, which tests often discard or never read (a server killed
    /// with SIGKILL), so `scripts/test` finds and counts every child's report.
    static func environment(_ environment: [String: String]) -> [String: String] {
        var environment = environment
        let inherited = ProcessInfo.processInfo.environment
        let reports = inherited["ISSUERD_TEST_SANITIZER_LOGS"].flatMap { $0.isEmpty ? nil : $0 }
        for name in ["TSAN_OPTIONS", "ASAN_OPTIONS", "LSAN_OPTIONS"] where environment[name] == nil {
            guard var value = inherited[name] else { continue }
            if let reports, name != "LSAN_OPTIONS" { value += " log_path=\(reports)/issuerd" }
            environment[name] = value
        }
        return environment
    }
}
