import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdPostgres
import IssuerdStorage
import IssuerdWire

extension CardImport {
    /// One line of the file: the body of `POST /v1/admin/cards` plus the optional `customer`.
    ///
    /// Decoded in one pass with the API's own decoder, so errors name the field as the API does.
    package struct Record: Decodable, Equatable {
        package var card: CardCreateRequest
        package var customer: CustomerFields?

        private enum Keys: String, CodingKey { case customer }

        package init(card: CardCreateRequest, customer: CustomerFields?) {
            self.card = card
            self.customer = customer
        }

        package init(from decoder: Decoder) throws {
            card = try CardCreateRequest(from: decoder)
            customer = try decoder.container(keyedBy: Keys.self).decodeIfPresent(CustomerFields.self, forKey: .customer)
        }
    }

    /// The first bad record of a slice: its line and a message without the record's values.
    package struct LineFailure: Error, Sendable {
        package var line: Int
        package var message: String
    }

    /// What one worker made of a slice of lines: for each card, its rows in COPY text for
    /// `cards` and `card_status_history`, its line, its customer and customer object, and where
    /// the slice stopped.
    package struct EncodedSlice: Sendable {
        /// `cards` rows in ``cardColumns`` order.
        package var cards = PostgresCopyText()
        /// `card_status_history` rows in ``historyColumns`` order.
        package var history = PostgresCopyText()
        /// Where each card's row ends in ``cards`` and in ``history``, to send a prefix of the slice.
        package var cardRowEnds: [Int] = []
        package var historyRowEnds: [Int] = []
        /// Each card's line in the file.
        package var lines: [Int] = []
        package var cardIDs: [String] = []
        package var customerIDs: [String] = []
        /// Each card's validated `customer` object, if its line had one.
        package var customers: [CustomerRecord?] = []
        package var failure: LineFailure?

        package var count: Int { lines.count }
    }

    /// The columns of the `cards` rows ``encode(_:now:vault:)`` writes, in order.
    package static let cardColumns = CardStore.copyColumns

    /// The columns of the `card_status_history` rows, in order: the API's `created` entry.
    package static let historyColumns = CardStore.historyCopyColumns

    /// Validates, seals and fingerprints each line of `lines`, stopping at the first bad one.
    ///
    /// Runs on a worker thread: it touches no connection, only the vault (which is `Sendable`).
    /// - Throws: A failure of the vault or of the random source (not a property of the record).
    package static func encode(_ lines: ArraySlice<(Int, [UInt8])>, now: Date, vault: PANVault) throws -> EncodedSlice {
        var slice = EncodedSlice()
        slice.cards = PostgresCopyText(capacity: lines.count * 330)
        slice.history = PostgresCopyText(capacity: lines.count * 64)
        slice.cardRowEnds.reserveCapacity(lines.count)
        slice.historyRowEnds.reserveCapacity(lines.count)
        slice.lines.reserveCapacity(lines.count)
        slice.cardIDs.reserveCapacity(lines.count)
        slice.customerIDs.reserveCapacity(lines.count)
        slice.customers.reserveCapacity(lines.count)
        let stamp = PostgresCopyText.timestampText(now)
        for (number, bytes) in lines {
            if isSkipped(bytes) { continue }
            do {
                try encodeLine(number, bytes, now: now, stamp: stamp, vault: vault, into: &slice)
            } catch let refusal as Refusal {
                slice.failure = LineFailure(line: number, message: refusal.message)
                return slice
            }
        }
        return slice
    }

    /// Blank lines and `#` comments.
    package static func isSkipped(_ bytes: [UInt8]) -> Bool {
        guard let first = bytes.firstIndex(where: { $0 != 0x20 && $0 != 0x09 }) else { return true }
        return bytes[first] == 0x23
    }

    private static func encodeLine(
        _ number: Int, _ bytes: [UInt8], now: Date, stamp: String, vault: PANVault, into slice: inout EncodedSlice
    ) throws {
        // The same decoding as the API: errors name the field, never the value. Plain lines take
        // the short way (the same record without JSONDecoder); any other goes the API's way.
        let record: Record
        if let decoded = LineDecoder.decode(bytes) {
            record = decoded
        } else {
            record = try JSONCoding.decode(Record.self, from: bytes)
        }
        let card = try CardRegistration.validate(record.card, now: now)
        var customer: CustomerRecord?
        if let fields = record.customer {
            if let id = fields.customerId, id != record.card.customerId {
                throw AdminValidation.invalid("customer.customerId", "must equal customerId when given")
            }
            customer = try CustomerAdministration.validate(
                CustomerUpsertRequest(
                    customerId: card.customerID, phoneNumber: fields.phoneNumber, email: fields.email,
                    phoneChangedAt: fields.phoneChangedAt,
                    emailChangedAt: fields.emailChangedAt, addressChangedAt: fields.addressChangedAt))
            customer?.createdAt = now
        }
        let sealed = try vault.seal(card.pan, context: CardStore.panContext(card.cardID))
        let fingerprint = try vault.fingerprint(card.pan)
        CardStore.appendCopyRow(
            cardID: card.cardID, customerID: card.customerID, sealed: sealed, fingerprint: fingerprint,
            lastFour: card.pan.lastFour, expiration: card.expiration, cardholderName: card.cardholderName,
            paymentNetwork: card.paymentNetwork, status: card.status, localizedDescription: card.localizedDescription,
            primaryAccountIdentifier: CardStore.primaryAccountIdentifier(fingerprint: fingerprint, cardID: card.cardID),
            country: card.country, stamp: stamp, into: &slice.cards)
        CardStore.appendCreatedHistoryRow(cardID: card.cardID, status: card.status, stamp: stamp, into: &slice.history)
        slice.cardRowEnds.append(slice.cards.bytes.count)
        slice.historyRowEnds.append(slice.history.bytes.count)
        slice.lines.append(number)
        slice.cardIDs.append(card.cardID)
        slice.customerIDs.append(card.customerID)
        slice.customers.append(customer)
    }
}
