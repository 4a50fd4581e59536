import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdPostgres
import IssuerdWire

/// `POST /v1/admin/cards` without the HTTP: validation, the insert and its audit entry, shared by
/// the route and `issuerd cards import`.
package enum CardRegistration {
    /// A request that passed every check; the PAN is held only as ``PrimaryAccountNumber``.
    package struct Validated: Sendable {
        package var cardID: String
        package var customerID: String
        package var pan: PrimaryAccountNumber
        package var expiration: CardExpiration
        package var cardholderName: String
        package var paymentNetwork: String
        package var status: CardStatusValue
        package var localizedDescription: String?
        package var country: String?
    }

    /// A card id made from 12 bytes (random, or a hash): `card_` and 24 letters, one per
    /// half-byte. Letters only, never hex: hex digits can line up into 12 to 19 digits passing
    /// the Luhn check, which ``AdminValidation/identifier(_:field:)`` refuses as a card number.
    package static func generatedID(_ bytes: some Collection<UInt8>) -> String {
        let letters = Array("bcdfghjklmnpqrst".utf8)
        var id = Array("card_".utf8)
        for byte in bytes.prefix(12) {
            id.append(letters[Int(byte >> 4)])
            id.append(letters[Int(byte & 0x0F)])
        }
        return String(decoding: id, as: UTF8.self)
    }

    /// Checks every field; generates a ``generatedID(_:)`` when `cardId` is absent.
    ///
    /// - Throws: 400 `invalid_request` for a bad shape, 422 `invalid_card` for a PAN failing the
    ///   Luhn check or an expired card.
    package static func validate(_ request: CardCreateRequest, now: Date) throws -> Validated {
        let cardID =
            try request.cardId.map { try AdminValidation.identifier($0, field: "cardId") }
            ?? generatedID(try SecureRandom.bytes(count: 12))
        let customerID = try AdminValidation.identifier(request.customerId, field: "customerId")
        guard request.accountNumber.utf8.count <= 19, let pan = PrimaryAccountNumber(request.accountNumber) else {
            throw Refusal(
                .unacceptable, code: AdminErrorCode.invalidCard,
                message: "accountNumber must be 12 to 19 digits passing the Luhn check",
                context: ["detail": "luhn"])
        }
        let expiration = try AdminValidation.expiration(request.expiration, now: now)
        let name = try AdminValidation.text(request.cardholderName, field: "cardholderName", maxLength: 128)
        let network = request.paymentNetwork.lowercased()
        guard request.paymentNetwork.utf8.count <= 32, AdminValidation.paymentNetworks.contains(network) else {
            throw AdminValidation.invalid(
                "paymentNetwork", "must be one of \(AdminValidation.paymentNetworks.sorted().joined(separator: ", "))")
        }
        var status = CardStatusValue.active
        if let text = request.status {
            guard text.utf8.count <= 16, let value = CardStatusValue(rawValue: text),
                CardStatusValue.settable.contains(value)
            else {
                throw AdminValidation.invalid(
                    "status", "must be one of \(CardStatusValue.settable.map(\.rawValue).joined(separator: ", "))")
            }
            status = value
        }
        let description = try request.localizedDescription.map {
            try AdminValidation.text($0, field: "localizedDescription", maxLength: 128)
        }
        if let country = request.country {
            guard country.utf8.count == 2, country.utf8.allSatisfy({ $0 >= 0x41 && $0 <= 0x5A }) else {
                throw AdminValidation.invalid("country", "must be an ISO 3166-1 alpha-2 code in capitals, e.g. KR")
            }
        }
        return Validated(
            cardID: cardID, customerID: customerID, pan: pan, expiration: expiration, cardholderName: name,
            paymentNetwork: network,
            status: status, localizedDescription: description?.isEmpty == true ? nil : description,
            country: request.country)
    }

    /// Inserts the card and its audit entry within the caller's transaction.
    ///
    /// - Throws: 404 `customer_not_found`; 409 `already_exists` for a card id or PAN that is
    ///   already registered.
    package static func register(
        _ card: Validated, actor: String, now: Date, vault: PANVault, connection: PostgresConnection
    ) throws -> CardRecord {
        guard try CustomerStore.find(card.customerID, connection: connection) != nil else {
            throw Refusal(.notFound, code: AdminErrorCode.customerNotFound, message: "no such customer")
        }
        let record: CardRecord
        do {
            record = try CardStore.insert(
                cardID: card.cardID, customerID: card.customerID, pan: card.pan, expiration: card.expiration,
                cardholderName: card.cardholderName, paymentNetwork: card.paymentNetwork, status: card.status,
                localizedDescription: card.localizedDescription, country: card.country, now: now, vault: vault,
                connection: connection)
        } catch let error as PostgresError where error.code == .uniqueViolation {
            let what =
                error.constraint == "cards_pan_fingerprint_key"
                ? "a card with this account number" : "a card with this cardId"
            throw Refusal(.conflict, code: AdminErrorCode.alreadyExists, message: "\(what) already exists")
        } catch let error as PostgresError where error.code == .foreignKeyViolation {
            throw Refusal(.notFound, code: AdminErrorCode.customerNotFound, message: "no such customer")
        }
        try AuditLog.append(
            actor: actor, action: "card.created", subject: "card:\(record.cardID)",
            details: [
                "customerId": record.customerID, "lastFour": record.lastFour, "paymentNetwork": record.paymentNetwork,
                "status": record.status.rawValue, "keyVersion": String(record.sealedPAN.keyVersion),
            ],
            at: now, connection: connection)
        return record
    }

    /// The operator's view of a card: never the PAN, only its last four digits.
    package static func adminCard(_ record: CardRecord) -> AdminCard {
        AdminCard(
            cardId: record.cardID, customerId: record.customerID, primaryAccountSuffix: record.lastFour,
            expiration: record.expiration.slashed,
            cardholderName: record.cardholderName, paymentNetwork: record.paymentNetwork,
            status: record.status.rawValue,
            localizedDescription: record.localizedDescription ?? defaultDescription(record),
            primaryAccountIdentifier: record.primaryAccountIdentifier, country: record.country)
    }

    /// What Wallet shows when the issuer gave no description, e.g. `Visa •••• 1234`.
    package static func defaultDescription(_ record: CardRecord) -> String {
        let network: String
        switch record.paymentNetwork {
        case "visa": network = "Visa"
        case "mastercard": network = "Mastercard"
        case "amex": network = "American Express"
        case "discover": network = "Discover"
        case "jcb": network = "JCB"
        case "unionpay": network = "UnionPay"
        default: network = "Card"
        }
        return "\(network) •••• \(record.lastFour)"
    }
}
