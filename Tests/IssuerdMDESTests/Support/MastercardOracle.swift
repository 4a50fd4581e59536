import Foundation
import IssuerdTestSupport
import Testing

/// Mastercard's own Python libraries (`mastercard-client-encryption`, `mastercard-oauth1-signer`,
/// pinned in scripts/lib/common.sh) driven through Oracle/mastercard_oracle.py.
enum MastercardOracle {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Oracle/mastercard_oracle.py").path

    /// The Python of the test venv; scripts/test sets `ISSUERD_TEST_PYTHON`.
    static func python() throws -> String {
        guard let path = ProcessInfo.processInfo.environment["ISSUERD_TEST_PYTHON"], !path.isEmpty else {
            throw OracleError(
                "ISSUERD_TEST_PYTHON is not set: run the tests through scripts/test, which installs Mastercard's libraries"
            )
        }
        return path
    }

    /// Runs one operation and returns its JSON answer.
    static func call(_ request: [String: Any]) throws -> [String: Any] {
        let input = try JSONSerialization.data(withJSONObject: request)
        let output = try ExternalProcess.run(try python(), [script], input: input)
        guard output.status == 0 else { throw OracleError("oracle \(request["op"] ?? "?") failed: \(output.stderr)") }
        guard let answer = try JSONSerialization.jsonObject(with: output.stdout) as? [String: Any] else {
            throw OracleError("oracle answered no JSON object")
        }
        return answer
    }

    /// Runs one operation expected to fail, and returns its standard error.
    static func failure(_ request: [String: Any]) throws -> String {
        let input = try JSONSerialization.data(withJSONObject: request)
        let output = try ExternalProcess.run(try python(), [script], input: input)
        guard output.status != 0 else { throw OracleError("oracle \(request["op"] ?? "?") unexpectedly succeeded") }
        return output.stderr
    }
}

/// A missing prerequisite or an oracle failure: thrown so the test fails with the reason.
struct OracleError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
