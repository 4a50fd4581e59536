import Foundation

/// The keys of the request's subject that velocity queries group by.
public struct VelocitySubject: Sendable, Hashable {
    /// The issuer's internal card id (never a PAN).
    public var cardID: String?
    /// The wallet device id.
    public var deviceID: String?
    /// The issuer's customer id.
    public var customerID: String?

    /// A subject; a nil key makes every query grouped by it unknown.
    public init(cardID: String? = nil, deviceID: String? = nil, customerID: String? = nil) {
        self.cardID = cardID
        self.deviceID = deviceID
        self.customerID = customerID
    }

    /// The id for `key`.
    public func id(for key: VelocityKey) -> String? {
        switch key {
        case .card: cardID
        case .device: deviceID
        case .customer: customerID
        }
    }
}

/// One request's velocity questions, asked in a single batch.
public struct VelocityBatch: Sendable {
    /// Whose history.
    public var subject: VelocitySubject
    /// The decision time; windows end just before it.
    public var time: Date
    /// The deduplicated queries of the compiled ruleset, in its order.
    public var queries: [VelocityQuery]

    /// A batch.
    public init(subject: VelocitySubject, time: Date, queries: [VelocityQuery]) {
        self.subject = subject
        self.time = time
        self.queries = queries
    }
}

/// Answers a request's velocity questions from stored history.
///
/// The PostgreSQL implementation turns the batch into one statement (one scalar subquery or
/// `count(*) FILTER (…)` per query) so a request costs one round trip.
public protocol VelocityProvider: Sendable {
    /// The value of each query, in the batch's order; nil is an explicit unknown (history not
    /// available, or the subject key missing).
    ///
    /// - Throws: When the history cannot be read at all; the caller decides how to fail.
    func values(for batch: VelocityBatch) throws -> [Int?]
}
