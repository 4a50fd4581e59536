import Foundation
import IssuerdCrypto
import IssuerdHTTP
import IssuerdPostgres
import IssuerdWire

extension CardImport {
    /// One line of the file: the body of `POST /v1/admin/cards` plus the optional `customer`.
    ///
    /// Decoded in one pass with the API's own decoder, so errors name the field as the API does.
    struct Record: Decodable {
        var card: CardCreateRequest
        var customer: CustomerFields?

        private enum Keys: String, CodingKey { case customer }

        init(from decoder: Decoder) throws {
            card = try CardCreateRequest(from: decoder)
            customer = try decoder.container(keyedBy: Keys.self).decodeIfPresent(CustomerFields.self, forKey: .customer)
        }
    }

    /// The first bad record of a slice: its line and a message without the record's values.
    struct LineFailure: Error, Sendable {
        var line: Int
        var message: String
    }

    /// What one worker made of a slice of lines: staging rows in COPY text, the cards' ids (for
    /// the audit digest) and where it stopped.
    struct EncodedSlice: Sendable {
        var copy = PostgresCopyText()
        var cardIDs: [String] = []
        var failure: LineFailure?
    }

    /// The staging table's columns, in the order ``encode(_:now:vault:)`` writes them.
    static let stagingColumns = """
        line, card_id, customer_id, pan_ciphertext, pan_key_version, pan_fingerprint, last_four, expiration, cardholder_name,
        payment_network, status, localized_description, primary_account_identifier, country,
        with_customer, phone_number, email, phone_changed_at, email_changed_at, address_changed_at
        """

    /// Validates, seals and fingerprints each line of `lines`, stopping at the first bad one.
    ///
    /// Runs on a worker thread: it touches no connection, only the vault (which is `Sendable`).
    /// - Throws: A failure of the vault or of the random source (not a property of the record).
    static func encode(_ lines: ArraySlice<(Int, [UInt8])>, now: Date, vault: PANVault) throws -> EncodedSlice {
        var slice = EncodedSlice()
        slice.copy = PostgresCopyText(capacity: lines.count * 400)
        slice.cardIDs.reserveCapacity(lines.count)
        for (number, bytes) in lines {
            if isSkipped(bytes) { continue }
            do {
                try encodeLine(number, bytes, now: now, vault: vault, into: &slice)
            } catch let error as HTTPError {
                slice.failure = LineFailure(line: number, message: error.message)
                return slice
            }
        }
        return slice
    }

    /// Blank lines and `#` comments.
    static func isSkipped(_ bytes: [UInt8]) -> Bool {
        guard let first = bytes.firstIndex(where: { $0 != 0x20 && $0 != 0x09 }) else { return true }
        return bytes[first] == 0x23
    }

    private static func encodeLine(_ number: Int, _ bytes: [UInt8], now: Date, vault: PANVault, into slice: inout EncodedSlice) throws {
        // The same decoding as the API: errors name the field, never the value.
        let request = HTTPRequest(method: .post, path: "/import", headers: ["Content-Type": "application/json"], body: bytes)
        let record = try request.decodeJSON(Record.self)
        let card = try CardRegistration.validate(record.card, now: now)
        var customer: CustomerRecord?
        if let fields = record.customer {
            if let id = fields.customerId, id != record.card.customerId {
                throw AdminValidation.invalid("customer.customerId", "must equal customerId when given")
            }
            customer = try CustomerAdministration.validate(
                CustomerUpsertRequest(
                    customerId: card.customerID, phoneNumber: fields.phoneNumber, email: fields.email, phoneChangedAt: fields.phoneChangedAt,
                    emailChangedAt: fields.emailChangedAt, addressChangedAt: fields.addressChangedAt))
        }
        let sealed = try vault.seal(card.pan, context: CardStore.panContext(card.cardID))
        let fingerprint = try vault.fingerprint(card.pan)
        slice.copy.integer(number)
        slice.copy.text(card.cardID)
        slice.copy.text(card.customerID)
        slice.copy.bytea(sealed.bytes)
        slice.copy.integer(sealed.keyVersion)
        slice.copy.bytea(fingerprint)
        slice.copy.text(card.pan.lastFour)
        slice.copy.text(card.expiration)
        slice.copy.text(card.cardholderName)
        slice.copy.text(card.paymentNetwork)
        slice.copy.text(card.status.rawValue)
        slice.copy.text(card.localizedDescription)
        slice.copy.text(CardStore.primaryAccountIdentifier(fingerprint: fingerprint, cardID: card.cardID))
        slice.copy.text(card.country)
        slice.copy.boolean(customer != nil)
        slice.copy.text(customer?.phoneNumber)
        slice.copy.text(customer?.email)
        slice.copy.timestamp(customer?.phoneChangedAt)
        slice.copy.timestamp(customer?.emailChangedAt)
        slice.copy.timestamp(customer?.addressChangedAt)
        slice.copy.endRow()
        slice.cardIDs.append(card.cardID)
    }
}
