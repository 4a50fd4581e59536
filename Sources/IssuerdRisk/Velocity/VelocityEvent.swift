import Foundation

/// One event of stored history that velocity functions count.
public struct VelocityEvent: Sendable, Hashable {
    /// The kind of event.
    public enum Kind: String, Sendable, Hashable, CaseIterable, Codable {
        /// An add-card attempt (decided in any flow).
        case attempt
        /// A wrong one-time code entered.
        case otpFailure = "otp_failure"
        /// A token deleted.
        case tokenDeletion = "token_deletion"
        /// A step-up that ended in failure (any method).
        case stepUpFailure = "stepup_failure"
    }

    /// What happened.
    public var kind: Kind
    /// When.
    public var time: Date
    /// The internal card id, if the event concerns a card.
    public var cardID: String?
    /// The wallet device id, if known.
    public var deviceID: String?
    /// The customer id, if known.
    public var customerID: String?
    /// The cardholder name entered in the wallet (attempts only; used for distinct names).
    public var cardholderName: String?

    /// An event.
    public init(
        kind: Kind, time: Date, cardID: String? = nil, deviceID: String? = nil, customerID: String? = nil,
        cardholderName: String? = nil
    ) {
        self.kind = kind
        self.time = time
        self.cardID = cardID
        self.deviceID = deviceID
        self.customerID = customerID
        self.cardholderName = cardholderName
    }

    /// The id this event carries for `key`.
    public func id(for key: VelocityKey) -> String? {
        switch key {
        case .card: cardID
        case .device: deviceID
        case .customer: customerID
        }
    }
}
