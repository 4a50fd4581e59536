import Foundation
import IssuerdCore

/// The SMS centre and the session kept with it (`ISSUERD_SMPP_*`, docs/configuration.md).
public struct SMPPSettings: Sendable {
    public var host: String
    public var port: Int
    /// `system_id` of bind_transceiver (at most 15 characters).
    public var systemID: String
    /// The bind password (at most 8 characters, SMPP 3.4's limit).
    public var password: Redacted<String>
    /// The sender shown on the handset: digits (a number) or up to 11 letters (alphanumeric).
    public var sourceAddress: String
    /// submit_sm outstanding at once, unanswered (`ISSUERD_SMPP_WINDOW`, default 10).
    public var window: Int
    /// Idle time before an enquire_link (`ISSUERD_SMPP_ENQUIRE_LINK_INTERVAL`, default 30s).
    public var enquireLinkInterval: Duration
    /// How long an answer (bind, submit_sm, enquire_link) may take before the session is
    /// dropped and bound again (the outbox's HTTP timeout).
    public var responseTimeout: Duration

    /// Creates the value from every stored property.
    public init(
        host: String, port: Int, systemID: String, password: Redacted<String>, sourceAddress: String,
        window: Int = 10, enquireLinkInterval: Duration = .seconds(30), responseTimeout: Duration = .seconds(10)
    ) {
        self.host = host
        self.port = port
        self.systemID = systemID
        self.password = password
        self.sourceAddress = sourceAddress
        self.window = window
        self.enquireLinkInterval = enquireLinkInterval
        self.responseTimeout = responseTimeout
    }

    /// Reads the `ISSUERD_SMPP_*` keys (called when `ISSUERD_SMS_PROVIDER=smpp`).
    ///
    /// - Throws: ``ConfigurationError`` naming the first missing or malformed key.
    package init(_ reader: ConfigurationReader, timeout: Duration) throws {
        let host = try reader.required("ISSUERD_SMPP_HOST", hint: "required when ISSUERD_SMS_PROVIDER=smpp")
        let port = try reader.integer("ISSUERD_SMPP_PORT", default: 2775, in: 1...65535)
        let systemID = try reader.required("ISSUERD_SMPP_SYSTEM_ID", hint: "the account the SMS centre gave")
        guard systemID.utf8.count <= 15, systemID.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw ConfigurationError(key: "ISSUERD_SMPP_SYSTEM_ID", problem: "must be at most 15 printable characters")
        }
        let password = try reader.required(
            "ISSUERD_SMPP_PASSWORD", hint: "the bind password (or ISSUERD_SMPP_PASSWORD_FILE)")
        guard password.utf8.count <= 8 else {
            throw ConfigurationError(key: "ISSUERD_SMPP_PASSWORD", problem: "must be at most 8 characters (SMPP 3.4)")
        }
        let source = try reader.required("ISSUERD_SMPP_SOURCE_ADDR", hint: "the sender shown on the handset")
        guard SMSAddress.source(source) != nil else {
            throw ConfigurationError(
                key: "ISSUERD_SMPP_SOURCE_ADDR",
                problem: "must be a number (digits, optional +) or 1 to 11 letters and digits")
        }
        self.init(
            host: host, port: port, systemID: systemID, password: Redacted(password), sourceAddress: source,
            window: try reader.integer("ISSUERD_SMPP_WINDOW", default: 10, in: 1...100),
            enquireLinkInterval: try reader.duration(
                "ISSUERD_SMPP_ENQUIRE_LINK_INTERVAL", default: .seconds(30), in: .seconds(1)...(.seconds(600))),
            responseTimeout: timeout)
    }
}

/// Addresses as SMPP carries them: a type of number, a numbering plan and the digits or text.
package struct SMSAddress: Sendable, Equatable {
    package var ton: UInt8
    package var npi: UInt8
    package var address: String

    /// The sender: `+8215881234` international (TON 1), digits unknown (TON 0), letters
    /// alphanumeric (TON 5, NPI 0); nil for anything else.
    package static func source(_ text: String) -> SMSAddress? {
        let digits = text.hasPrefix("+") ? String(text.dropFirst()) : text
        if !digits.isEmpty, digits.utf8.count <= 20, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            return SMSAddress(ton: text.hasPrefix("+") ? 1 : 0, npi: 1, address: digits)
        }
        guard (1...11).contains(text.utf8.count), text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return nil }
        return SMSAddress(ton: 5, npi: 0, address: text)
    }

    /// The handset: the phone number on file without separators (`010-1234-5678` → `01012345678`,
    /// TON 0 NPI 1, the SMS centre's national format; `+82 10 …` → `8210…`, TON 1); nil when it
    /// holds anything but digits, spaces, dashes, dots, brackets and a leading plus.
    package static func destination(_ text: String) -> SMSAddress? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        var digits = ""
        for (index, character) in trimmed.enumerated() {
            if character.isASCII, character.isNumber {
                digits.append(character)
            } else if character == "+" && index == 0 {
                continue
            } else if !" -.()".contains(character) {
                return nil
            }
        }
        guard (3...20).contains(digits.count) else { return nil }
        return SMSAddress(ton: trimmed.hasPrefix("+") ? 1 : 0, npi: 1, address: digits)
    }
}
