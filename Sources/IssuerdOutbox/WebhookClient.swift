import Foundation
import Synchronization

#if canImport(FoundationNetworking)
import FoundationNetworking
import IssuerdService
#endif

/// Signed JSON POSTs to a webhook receiver, synchronously, for the dispatcher thread.
///
/// Foundation's `URLSession` does the HTTP (no parser of our own); the call blocks the
/// dispatcher's own thread, never Swift's cooperative pool. Signing is the TSP scheme of
/// api.md (`X-Issuerd-Signature: t=…,v1=…`), and the message's dedup key travels as
/// `Idempotency-Key` so the receiver can drop the duplicates at-least-once delivery implies.
package struct WebhookClient: Sendable {
    package let url: URL
    package let secret: String
    package let timeout: Duration
    package let session: URLSession

    package init(url: URL, secret: String, timeout: Duration) {
        self.url = url
        self.secret = secret
        self.timeout = timeout
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = OutboxBackoff.seconds(timeout)
        configuration.timeoutIntervalForResource = OutboxBackoff.seconds(timeout)
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        session = URLSession(configuration: configuration)
    }

    /// POSTs `body`, signed at `now`.
    ///
    /// - Throws: ``OutboxError`` `.transport` when the receiver cannot be reached in time,
    ///   `.rejected` for a non-2xx answer. The error text names the status or the transport
    ///   failure, never the body.
    package func post(_ body: [UInt8], idempotencyKey: String, now: Date) throws {
        var request = URLRequest(
            url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: OutboxBackoff.seconds(timeout))
        request.httpMethod = "POST"
        request.httpBody = Data(body)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue(idempotencyKey, forHTTPHeaderField: "Idempotency-Key")
        request.setValue(
            try TSPSignature.header(body: body, secret: secret, timestamp: Int64(now.timeIntervalSince1970)),
            forHTTPHeaderField: TSPSignature.headerName)

        let outcome = OutcomeBox()
        let done = DispatchSemaphore(value: 0)
        let task = session.dataTask(with: request) { _, response, error in
            let result: Result<Int, OutboxError>
            if let error {
                result = .failure(OutboxError(.transport, "transport error \((error as NSError).code)"))
            } else if let http = response as? HTTPURLResponse {
                result = .success(http.statusCode)
            } else {
                result = .failure(OutboxError(.transport, "no HTTP response"))
            }
            outcome.value.withLock { $0 = result }
            done.signal()
        }
        task.resume()
        // The session's own timeout ends the task; the extra second only guards against a
        // completion handler that never runs.
        if done.wait(timeout: .now() + OutboxBackoff.seconds(timeout) + 1) == .timedOut {
            task.cancel()
            throw OutboxError(.transport, "timed out")
        }
        switch outcome.value.withLock({ $0 }) {
        case .success(let status) where (200..<300).contains(status):
            return
        case .success(let status):
            throw OutboxError(.rejected, "HTTP \(status)")
        case .failure(let error):
            throw error
        case nil:
            throw OutboxError(.transport, "no outcome")
        }
    }
}

/// Carries the completion handler's result to the waiting thread (a `Mutex` cannot be captured
/// by an escaping closure directly).
private final class OutcomeBox: Sendable {
    // Guarded by Mutex.
    let value = Mutex<Result<Int, OutboxError>?>(nil)
}
