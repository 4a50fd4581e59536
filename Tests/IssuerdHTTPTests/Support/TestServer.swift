import Foundation
import IssuerdCore
import IssuerdHTTP
import IssuerdTestSupport

/// A body the test routes decode, shaped like part of the provisioning request.
struct ProvisionProbe: Codable, Sendable {
    struct Device: Codable, Sendable { var id: String }
    var nonce: String
    var certificates: [String]?
    var device: Device
}

/// A real server on 127.0.0.1 port 0 with routes that exercise every server path, plus the
/// log and metrics it writes to.
struct TestServer {
    static let bodyLimit = 4096

    let server: HTTPServer
    let log: CapturingLogHandler
    let metrics: MetricsRegistry
    let client: HTTPTestClient
    /// Calls of the `/guarded` handler.
    let guardedCalls = CallCounter()
    var port: Int { server.port }

    /// Starts a server; `gate` holds requests to `/slow` until released.
    init(gate: Gate = Gate(), threads: Int = 4, limits: HTTPServerLimits = HTTPServerLimits()) throws {
        log = CapturingLogHandler()
        metrics = MetricsRegistry()
        var router = Router()
        Self.addRoutes(to: &router, gate: gate, calls: guardedCalls)
        let configuration = HTTPServerConfiguration(
            listen: try ListenAddress.parse("127.0.0.1:0"), threadCount: threads, bodyLimit: Self.bodyLimit,
            limits: limits, connectionTimeout: 30)
        server = HTTPServer(
            configuration: configuration, router: router, logger: log.logger("issuerd.http", level: .info),
            metrics: metrics)
        try server.start()
        client = HTTPTestClient(port: server.port)
    }

    static func addRoutes(to router: inout Router, gate: Gate, calls: CallCounter = CallCounter()) {
        router.add(.get, "/v1/cards/{cardId}") { request in
            try .json(["cardId": request.pathParameters["cardId"] ?? "", "route": request.route])
        }
        router.add(.post, "/v1/cards/{cardId}/apple-pay/provision") { request in
            let probe = try request.decodeJSON(ProvisionProbe.self)
            return try .json([
                "cardId": request.pathParameters["cardId"] ?? "", "nonce": probe.nonce, "deviceId": probe.device.id,
            ])
        }
        router.add(.post, "/echo") { request in
            try .json([
                "bytes": JSONValue.int(request.body.count),
                "text": .string(String(decoding: request.body, as: UTF8.self)),
            ])
        }
        router.add(.get, "/inspect") { request in
            var query: [String: JSONValue] = [:]
            for (name, value) in request.query { query[name] = .string(value) }
            return try .json([
                "path": JSONValue.string(request.path), "query": .object(query),
                "requestId": .string(request.requestId),
                "remoteAddress": request.remoteAddress.map(JSONValue.string) ?? .null,
            ])
        }
        router.add(.get, "/inspect/{rest}") { request in
            try .json(["rest": request.pathParameters["rest"] ?? ""])
        }
        router.add(.get, "/boom") { _ in
            throw ProbeFailure(detail: "database password=hunter2 rejected")
        }
        router.add(.get, "/teapot") { _ in
            throw HTTPError(status: 418, code: "short_and_stout", message: "I am a teapot", context: ["spout": true])
        }
        router.add(.get, "/slow") { _ in
            gate.pass()
            return .text("finished")
        }
        // A route whose credential is checked on the head, before its body is read.
        router.add(
            .post, "/guarded",
            admission: { request in
                guard request.headers["Authorization"] == "Bearer good" else {
                    throw HTTPError(status: 401, code: "unauthenticated", message: "no credential")
                }
                return "principal of \(request.requestId)"
            },
            { request in
                calls.count()
                var response = try HTTPResponse.json(["bytes": request.body.count])
                response.headers.set("X-Admitted", "\(request.admitted ?? "none")")
                return response
            })
    }
}

/// An unexpected error whose text must never reach a client.
struct ProbeFailure: Error, CustomStringConvertible {
    var detail: String
    var description: String { "ProbeFailure(\(detail))" }
}
