import Foundation
import IssuerdCore
import IssuerdHTTP
import Testing

@testable import IssuerdAPI

@Suite("Configuration")
struct ConfigurationTests {
    static let minimal: [String: String] = [
        "ISSUERD_DATABASE_URL": "postgresql:///issuerd",
        "ISSUERD_MASTER_KEY": Data(repeating: 7, count: 32).base64EncodedString(),
        "ISSUERD_APP_JWT_SECRET": String(repeating: "s", count: 32),
        "ISSUERD_TSP_HMAC_SECRET": String(repeating: "t", count: 16),
    ]

    @Test("Defaults apply when only the required settings are given")
    func defaults() throws {
        let configuration = try IssuerdConfiguration(ConfigurationReader(Self.minimal))
        #expect(configuration.listen == "127.0.0.1:8080")
        #expect(configuration.rulesDirectory == "rules")
        #expect(configuration.databasePoolSize == 8)
        #expect(configuration.httpThreads == 8)
        #expect(configuration.httpNetworkThreads == min(8, HTTPServerConfiguration.defaultNetworkThreadCount()))
        #expect(configuration.appleTrust == .production)
        #expect(configuration.appleCheckValidity)
        #expect(!configuration.enableRSAV2)
        #expect(configuration.masterKeys.map(\.version) == [1])
        #expect(configuration.activationValidity == .seconds(1800))
        #expect(configuration.databaseDeadPeerTimeout == .seconds(3))
        #expect(configuration.httpLimits == HTTPServerLimits())
        #expect(configuration.httpLimits.maxConnections == 512)
        #expect(configuration.httpLimits.maxConnectionsPerAddress == 128)
        #expect(configuration.httpLimits.headTimeout == .seconds(10))
        #expect(configuration.appJWT.maxLifetime == .seconds(3600))
        #expect(configuration.appJWT.issuer == nil && configuration.appJWT.audience == nil)
    }

    /// One network thread per four processors, at least one, never more than the handlers.
    @Test func networkThreadsDefaultAndOverride() throws {
        #expect(HTTPServerConfiguration.defaultNetworkThreadCount(processors: 1) == 1)
        #expect(HTTPServerConfiguration.defaultNetworkThreadCount(processors: 2) == 1)
        #expect(HTTPServerConfiguration.defaultNetworkThreadCount(processors: 8) == 2)
        #expect(HTTPServerConfiguration.defaultNetworkThreadCount(processors: 64) == 16)
        var environment = Self.minimal
        environment["ISSUERD_HTTP_NETWORK_THREADS"] = "3"
        #expect(try IssuerdConfiguration(ConfigurationReader(environment)).httpNetworkThreads == 3)
        var server = HTTPServerConfiguration(threadCount: 2, networkThreadCount: nil)
        #expect(server.effectiveNetworkThreadCount <= 2)
        server.networkThreadCount = 3
        #expect(throws: HTTPServerError.self) { try server.validate() }
    }

    @Test("The HTTP limits are read from ISSUERD_HTTP_*")
    func httpLimits() throws {
        var environment = Self.minimal
        environment.merge([
            "ISSUERD_HTTP_MAX_CONNECTIONS": "64", "ISSUERD_HTTP_CONNECTION_MEMORY": "65536",
            "ISSUERD_HTTP_HEAD_TIMEOUT": "5s", "ISSUERD_HTTP_BODY_TIMEOUT": "1m", "ISSUERD_HTTP_IDLE_TIMEOUT": "2m",
        ]) { _, new in new }
        let limits = try IssuerdConfiguration(ConfigurationReader(environment)).httpLimits
        // The per-address default never exceeds the total.
        #expect(
            limits
                == HTTPServerLimits(
                    maxConnections: 64, maxConnectionsPerAddress: 64, connectionMemory: 65536, headTimeout: .seconds(5),
                    bodyTimeout: .seconds(60), idleTimeout: 120))
    }

    @Test(
        "A missing or malformed setting names itself",
        arguments: [
            ("ISSUERD_DATABASE_URL", nil, "ISSUERD_DATABASE_URL: is required"),
            ("ISSUERD_MASTER_KEY", nil, "ISSUERD_MASTER_KEY: is required"),
            ("ISSUERD_MASTER_KEY", "c2hvcnQ=", "ISSUERD_MASTER_KEY: must decode to 32 bytes, not 5"),
            ("ISSUERD_MASTER_KEY", "***", "ISSUERD_MASTER_KEY: must be standard base64"),
            ("ISSUERD_DB_POOL_SIZE", "0", "ISSUERD_DB_POOL_SIZE: must be a whole number from 1 to 256"),
            ("ISSUERD_DB_DEAD_PEER_TIMEOUT", "500ms", "ISSUERD_DB_DEAD_PEER_TIMEOUT: must be a duration"),
            ("ISSUERD_DB_DEAD_PEER_TIMEOUT", "soon", "ISSUERD_DB_DEAD_PEER_TIMEOUT: must be a duration"),
            ("ISSUERD_APPLE_TRUST", "/nonexistent.pem", "ISSUERD_APPLE_TRUST: must be production, sandbox"),
            ("ISSUERD_APPLE_CHECK_VALIDITY", "maybe", "ISSUERD_APPLE_CHECK_VALIDITY: must be true or false"),
            ("ISSUERD_ACTIVATION_VALIDITY", "31d", "ISSUERD_ACTIVATION_VALIDITY: must be a duration"),
            ("ISSUERD_APP_JWT_SECRET", "short", "ISSUERD_APP_JWT_SECRET: must be at least 32 bytes"),
            ("ISSUERD_APP_JWT_MAX_LIFETIME", "100y", "ISSUERD_APP_JWT_MAX_LIFETIME: must be a duration"),
            ("ISSUERD_APP_JWT_MAX_LIFETIME", "25h", "ISSUERD_APP_JWT_MAX_LIFETIME: must be a duration"),
            ("ISSUERD_APP_JWT_ISSUER", "a\u{1}b", "ISSUERD_APP_JWT_ISSUER: must be at most 256 characters"),
            ("ISSUERD_HTTP_MAX_CONNECTIONS", "4", "ISSUERD_HTTP_MAX_CONNECTIONS: must be a whole number from 8"),
            ("ISSUERD_HTTP_NETWORK_THREADS", "9", "ISSUERD_HTTP_NETWORK_THREADS: must be a whole number from 1 to 8"),
            ("ISSUERD_HTTP_NETWORK_THREADS", "0", "ISSUERD_HTTP_NETWORK_THREADS: must be a whole number from 1 to 8"),
            ("ISSUERD_HTTP_MAX_CONNECTIONS_PER_ADDRESS", "513", "ISSUERD_HTTP_MAX_CONNECTIONS_PER_ADDRESS: must be"),
            ("ISSUERD_HTTP_CONNECTION_MEMORY", "1024", "ISSUERD_HTTP_CONNECTION_MEMORY: must be a whole number"),
            ("ISSUERD_HTTP_HEAD_TIMEOUT", "20m", "ISSUERD_HTTP_HEAD_TIMEOUT: must be a duration"),
            ("ISSUERD_HTTP_BODY_TIMEOUT", "0s", "ISSUERD_HTTP_BODY_TIMEOUT: must be a duration"),
            ("ISSUERD_TSP_HMAC_SECRET", nil, "ISSUERD_TSP_HMAC_SECRET: is required"),
            ("ISSUERD_NOTIFY_PROVIDER", "pigeon", "ISSUERD_NOTIFY_PROVIDER: must be one of log, webhook"),
            ("ISSUERD_LOG_LEVEL", "loud", "ISSUERD_LOG_LEVEL: must be one of"),
            ("ISSUERD_TSP_WEBHOOK_URL", "ftp://x", "ISSUERD_TSP_WEBHOOK_URL: must be an http:// or https:// URL"),
            (
                "ISSUERD_MASTER_KEY_PREVIOUS", "1:" + Data(repeating: 1, count: 32).base64EncodedString(),
                "ISSUERD_MASTER_KEY_PREVIOUS: must be version:base64"
            ),
        ] as [(String, String?, String)])
    func namesTheSetting(key: String, value: String?, expected: String) {
        var environment = Self.minimal
        environment[key] = value
        do {
            _ = try IssuerdConfiguration(ConfigurationReader(environment))
            Issue.record("expected an error for \(key)")
        } catch let error as ConfigurationError {
            #expect(error.description.hasPrefix(expected), "\(error.description)")
            #expect(!error.description.contains(Data(repeating: 7, count: 32).base64EncodedString()))
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test("Previous master keys are read with their versions")
    func previousKeys() throws {
        var environment = Self.minimal
        environment["ISSUERD_MASTER_KEY_VERSION"] = "3"
        environment["ISSUERD_MASTER_KEY_PREVIOUS"] =
            "2:" + Data(repeating: 2, count: 32).base64EncodedString() + ",1:"
            + Data(repeating: 1, count: 32).base64EncodedString()
        let configuration = try IssuerdConfiguration(ConfigurationReader(environment))
        #expect(configuration.masterKeys.map(\.version) == [3, 2, 1])
        #expect(configuration.masterKeys[1].key.unsafeValue == Array(repeating: 2, count: 32))
    }

    @Test("A config file is layered under the environment")
    func configFile() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("issuerd-\(UUID().uuidString).env")
            .path
        try "# comment\nISSUERD_LISTEN=\"0.0.0.0:9000\"\nISSUERD_RULES_DIR=/from/file\n".write(
            toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        var environment = Self.minimal
        environment["ISSUERD_RULES_DIR"] = "/from/env"
        let configuration = try IssuerdConfiguration(ConfigurationReader.layered(file: path, environment: environment))
        #expect(configuration.listen == "0.0.0.0:9000")
        #expect(configuration.rulesDirectory == "/from/env")
        try "NOT A SETTING\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(throws: ConfigurationError.self) { try ConfigurationReader.layered(file: path, environment: [:]) }
    }

    @Test(
        "Durations parse with units",
        arguments: [
            ("500ms", Duration.milliseconds(500)), ("30s", .seconds(30)), ("10m", .seconds(600)),
            ("24h", .seconds(86400)), ("14d", .seconds(14 * 86400)),
        ])
    func durations(text: String, expected: Duration) {
        #expect(ConfigurationReader.parseDuration(text) == expected)
    }
}
