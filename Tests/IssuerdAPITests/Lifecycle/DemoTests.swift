import Foundation
import IssuerdTestSupport
import Testing

/// `issuerd demo` against a real server, as a newcomer runs it: again and again.
@Suite("issuerd demo: green, yellow and orange on every run")
struct DemoTests {
    @Test("Three runs in a row each give green, yellow and orange (each run uses devices of its own)")
    func threeRuns() throws {
        let app = try TestApplication(transport: .live)
        let environment = [
            "ISSUERD_ADMIN_KEY": try app.apiKey(role: .admin), "ISSUERD_APP_JWT_SECRET": app.appJWTSecret,
            "ISSUERD_TSP_HMAC_SECRET": app.tspSecret,
        ]
        for run in 1...3 {
            let result = try CommandLineRunner.run(
                [
                    "demo", "--url", "http://127.0.0.1:\(app.application.port)", "--pki",
                    app.directory.appendingPathComponent("pki").path,
                ], environment: environment)
            #expect(result.status == 0, "run \(run): \(result.standardOutput) \(result.standardError)")
            #expect(result.standardOutput.contains("all three cases came out as expected"), "run \(run)")
            #expect(!result.standardOutput.contains("!!"), "run \(run): \(result.standardOutput)")
        }
    }
}
