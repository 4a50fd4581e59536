import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The HTTP answer to the last attempt of a call.
struct HTTPReply: Sendable {
    /// The HTTP status.
    let status: Int
    /// The body, at most ``maximumBodySize`` bytes.
    let body: Data
    /// The server's `X-Request-Id`, else the one this attempt sent.
    let requestId: String
    /// `Retry-After` as a duration (delta-seconds or HTTP-date, RFC 9110 §10.2.3).
    let retryAfter: Duration?

    /// Larger answers are not issuerd's (the card list of one customer is a few KiB).
    static let maximumBodySize = 1 << 20

    /// Whether the status is 2xx.
    var isSuccess: Bool { (200..<300).contains(status) }

    /// Creates a reply from its parts.
    init(status: Int, body: Data, requestId: String, retryAfter: Duration?) {
        self.status = status
        self.body = body
        self.requestId = requestId
        self.retryAfter = retryAfter
    }

    /// Creates a reply from URLSession's answer.
    init(_ response: HTTPURLResponse, body: Data, sentRequestId: String, now: Date = Date()) {
        let echoed = response.value(forHTTPHeaderField: "X-Request-Id").map { String($0.prefix(128)) }
        self.init(
            status: response.statusCode,
            body: body,
            requestId: echoed.flatMap { $0.isEmpty ? nil : $0 } ?? sentRequestId,
            retryAfter: response.value(forHTTPHeaderField: "Retry-After").flatMap { Self.parseRetryAfter($0, now: now) }
        )
    }

    /// Parses `Retry-After`; bounded to a day so a hostile value cannot park the app.
    static func parseRetryAfter(_ value: String, now: Date) -> Duration? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Int(trimmed), seconds >= 0 { return .seconds(min(seconds, 86_400)) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        guard let date = formatter.date(from: trimmed) else { return nil }
        let seconds = min(max(date.timeIntervalSince(now), 0), 86_400)
        return .milliseconds(Int(seconds * 1000))
    }
}
