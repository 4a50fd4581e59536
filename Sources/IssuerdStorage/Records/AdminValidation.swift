import Foundation
import IssuerdCore
import IssuerdCrypto

/// The error codes only the admin surface uses (docs/api-errors.md).
package enum AdminErrorCode {
    /// A card to register fails the Luhn check or has expired.
    package static let invalidCard = "invalid_card"
    /// A `cardId` (or PAN) given on creation already exists.
    package static let alreadyExists = "already_exists"
    /// The named customer does not exist.
    package static let customerNotFound = "customer_not_found"
}

/// Bounds and shapes of the values operators send, checked before anything reaches the database
/// (whose CHECK constraints are the last line, not the first: a constraint violation would be a
/// 500, and its message names columns).
package enum AdminValidation {
    /// Card networks the schema accepts (`cards.payment_network`).
    package static let paymentNetworks: Set<String> = [
        "visa", "mastercard", "amex", "discover", "jcb", "unionpay", "other",
    ]

    /// `invalid_request` naming the field; the value itself is never echoed.
    package static func invalid(
        _ field: String, _ problem: String, file: String = #fileID, line: Int = #line
    ) -> Refusal {
        Refusal.invalidRequest("\(field) \(problem)", field: field, file: file, line: line)
    }

    /// An issuer-chosen identifier: 1–64 characters of `[A-Za-z0-9._:-]`, holding no card number
    /// (``CardNumberText/holdsCardNumber(_:)``): an id is stored in clear in the cards, their
    /// status history and the append-only audit log, where a PAN could never be scrubbed.
    package static func identifier(_ value: String, field: String) throws -> String {
        let bytes = value.utf8
        guard (1...64).contains(bytes.count), bytes.allSatisfy(isIdentifierByte) else {
            throw invalid(field, "must be 1 to 64 characters of A-Z a-z 0-9 . _ : -")
        }
        guard !CardNumberText.holdsCardNumber(value) else {
            throw invalid(field, "must not hold a card number (12 to 19 digits passing the Luhn check)")
        }
        return value
    }

    /// Free text shown to people (names, descriptions, reasons): bounded, no control characters.
    package static func text(_ value: String, field: String, maxLength: Int, allowEmpty: Bool = false) throws -> String
    {
        // Printable ASCII (the common case, and the bulk import's hot path): the only blank is
        // the space and nothing is a control character, so trimming needs no CharacterSet.
        if value.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) {
            let bytes = value.utf8
            let first = bytes.firstIndex { $0 != 0x20 } ?? bytes.endIndex
            let last = bytes.lastIndex { $0 != 0x20 }.map { bytes.index(after: $0) } ?? first
            let trimmed = first == bytes.startIndex && last == bytes.endIndex ? value : String(value[first..<last])
            guard bytes.distance(from: first, to: last) <= maxLength, allowEmpty || first < last else {
                throw invalid(
                    field,
                    allowEmpty ? "must be at most \(maxLength) characters" : "must be 1 to \(maxLength) characters")
            }
            return trimmed
        }
        return try unicodeText(value, field: field, maxLength: maxLength, allowEmpty: allowEmpty)
    }

    /// ``text(_:field:maxLength:allowEmpty:)`` for any string (Unicode blanks and control characters).
    package static func unicodeText(
        _ value: String, field: String, maxLength: Int, allowEmpty: Bool = false
    ) throws -> String {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        // Counted in Unicode scalars, as PostgreSQL's length() counts the column's CHECK: in
        // characters as people see them, "e" + U+0301 is one, and 128 of them are 256 for the table.
        guard trimmed.unicodeScalars.count <= maxLength, allowEmpty || !trimmed.isEmpty else {
            throw invalid(
                field, allowEmpty ? "must be at most \(maxLength) characters" : "must be 1 to \(maxLength) characters")
        }
        guard !trimmed.containsControlCharacter else {
            throw invalid(field, "must not contain control characters")
        }
        return trimmed
    }

    /// An E.164-like phone number: an optional `+`, then digits with spaces, dashes or
    /// parentheses, 7 to 15 digits, at most 32 characters (Korean `010-1234-5678` included).
    package static func phoneNumber(_ value: String) throws -> String {
        let allowed = value.utf8.enumerated().allSatisfy { index, byte in
            (byte >= 0x30 && byte <= 0x39) || byte == 0x20 || byte == 0x2D || byte == 0x28 || byte == 0x29
                || (byte == 0x2B && index == 0)
        }
        let digits = value.utf8.filter { $0 >= 0x30 && $0 <= 0x39 }.count
        guard value.utf8.count <= 32, allowed, (7...15).contains(digits) else {
            throw invalid(
                "phoneNumber", "must be a phone number such as +821012345678 (7 to 15 digits, at most 32 characters)")
        }
        return value
    }

    /// An e-mail address: at most 254 characters, exactly one `@` with text on both sides, no
    /// spaces or control characters (RFC 5321 section 4.5.3.1.3 bounds the path to 256).
    package static func email(_ value: String) throws -> String {
        let parts = value.split(separator: "@", omittingEmptySubsequences: false)
        let printable = value.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value != 0x7F }
        guard value.utf8.count <= 254, parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty,
            parts[0].utf8.count <= 64, printable
        else {
            throw invalid("email", "must be an e-mail address of at most 254 characters")
        }
        return value
    }

    /// An ISO-8601 date-time with a zone, with or without fractional seconds.
    package static func timestamp(_ value: String, field: String) throws -> Date {
        guard let date = RFC3339.date(value) else {
            throw invalid(field, "must be an ISO-8601 date-time such as 2025-01-31T09:00:00Z")
        }
        return date
    }

    /// `MM/YY`, and not before the current month (a card is valid through the end of its month).
    ///
    /// - Throws: 400 for the wrong shape; 422 `invalid_card` for an expired card.
    package static func expiration(_ value: String, now: Date) throws -> CardExpiration {
        guard let expiration = CardExpiration(value) else { throw invalid("expiration", "must be MM/YY") }
        let current = monthNumber(now)
        guard (2000 + expiration.year) * 12 + expiration.month >= current else {
            throw Refusal(
                .unacceptable, code: AdminErrorCode.invalidCard, message: "the card has expired",
                context: ["detail": "expired"])
        }
        return expiration
    }

    /// `year * 12 + month` of `date` in UTC, as the Gregorian calendar counts them.
    package static func monthNumber(_ date: Date) -> Int {
        let seconds = date.timeIntervalSince1970
        // 1970 to 9999: days to a civil date (H. Hinnant's algorithm; the proleptic Gregorian
        // calendar, which Foundation's agrees with after 1582). A Calendar per call cost more
        // than the rest of a card's validation.
        guard seconds.isFinite, seconds >= 0, seconds < 253_402_300_800 else {
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = TimeZone(identifier: "UTC") ?? .current
            let today = calendar.dateComponents([.year, .month], from: date)
            return (today.year ?? 2000) * 12 + (today.month ?? 1)
        }
        let civil = CivilDate.date(days: Int((seconds / 86_400).rounded(.down)))
        return civil.year * 12 + civil.month
    }

    private static func isIdentifierByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x2E, 0x5F, 0x3A, 0x2D: return true
        default: return false
        }
    }
}
