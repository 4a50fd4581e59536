import Foundation
import IssuerdAuth
import IssuerdCore
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Signed JSON POSTs to a webhook receiver, synchronously, for the dispatcher thread.
///
/// Signing is the TSP scheme (`X-Issuerd-Signature: t=…,v1=…`, docs/openapi.yaml), and the message's
/// dedup key travels as `Idempotency-Key` so the receiver can drop the duplicates at-least-once
/// delivery implies.
package struct WebhookClient: Sendable {
    package let url: URL
    package let secret: String
    package let poster: HTTPPoster

    package init(url: URL, secret: String, timeout: Duration, userAgent: String = BuildInfo.unknown.userAgent) {
        self.url = url
        self.secret = secret
        poster = HTTPPoster(timeout: timeout, userAgent: userAgent)
    }

    /// POSTs `body`, signed at `now`.
    ///
    /// - Throws: ``OutboxError`` `.transport` when the receiver cannot be reached in time,
    ///   `.rejected` for a non-2xx answer. The error text names the status or the transport
    ///   failure, never the body.
    package func post(_ body: [UInt8], idempotencyKey: String, now: Date) throws {
        let signature = try TSPSignature.header(body: body, secret: secret, timestamp: Int64(now.timeIntervalSince1970))
        let answer = try poster.post(
            url: url,
            headers: [
                ("Content-Type", "application/json"), ("Idempotency-Key", idempotencyKey),
                (TSPSignature.headerName, signature),
            ], body: body)
        guard (200..<300).contains(answer.status) else { throw OutboxError(.rejected, "HTTP \(answer.status)") }
    }
}

/// One synchronous HTTP POST through Foundation's `URLSession` (no HTTP parser of our own).
///
/// The call blocks the dispatcher's own thread, never Swift's cooperative pool. Every call names
/// issuerd's version in `User-Agent` and, when it is made for a request (``TraceContext/current``),
/// carries the request's `traceparent`.
package struct HTTPPoster: Sendable {
    package let timeout: Duration
    package let session: URLSession
    /// `issuerd/<version>` (``BuildInfo/userAgent``).
    package let userAgent: String
    /// Answers longer than this are cut (the outbox reads statuses and short JSON errors only).
    package static let answerLimit = 65536

    package init(timeout: Duration, userAgent: String = BuildInfo.unknown.userAgent) {
        self.timeout = timeout
        self.userAgent = userAgent
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout.timeInterval
        configuration.timeoutIntervalForResource = timeout.timeInterval
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        // The dispatcher's lanes may all call one host at once (`ISSUERD_OUTBOX_CONCURRENCY`, at
        // most 64): none waits for a connection behind the others.
        configuration.httpMaximumConnectionsPerHost = 64
        session = URLSession(configuration: configuration)
    }

    /// POSTs `body` with `headers` and returns the status and (at most ``answerLimit`` bytes of)
    /// the answer.
    ///
    /// - Throws: ``OutboxError`` `.transport` when no answer arrived in time.
    package func post(url: URL, headers: [(String, String)], body: [UInt8]) throws -> (status: Int, body: [UInt8]) {
        var request = URLRequest(
            url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: timeout.timeInterval)
        request.httpMethod = "POST"
        request.httpBody = Data(body)
        request.setValue(userAgent, forHTTPHeaderField: "User-Agent")
        if let trace = TraceContext.current {
            request.setValue(trace.traceparent, forHTTPHeaderField: TraceContext.headerName)
        }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }

        // The completion handler's result, carried to this thread.
        let outcome = Lock<Result<(Int, [UInt8]), OutboxError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let task = session.dataTask(with: request) { data, response, error in
            let result: Result<(Int, [UInt8]), OutboxError>
            if let error {
                result = .failure(OutboxError(.transport, "transport error \((error as NSError).code)"))
            } else if let http = response as? HTTPURLResponse {
                result = .success((http.statusCode, Array((data ?? Data()).prefix(Self.answerLimit))))
            } else {
                result = .failure(OutboxError(.transport, "no HTTP response"))
            }
            outcome.withLock { $0 = result }
            done.signal()
        }
        task.resume()
        // The session's own timeout ends the task; the extra second only guards against a
        // completion handler that never runs.
        if done.wait(timeout: .now() + timeout.timeInterval + 1) == .timedOut {
            task.cancel()
            throw OutboxError(.transport, "timed out")
        }
        switch outcome.withLock({ $0 }) {
        case .success(let answer): return (answer.0, answer.1)
        case .failure(let error): throw error
        case nil: throw OutboxError(.transport, "no outcome")
        }
    }
}
