import Foundation
import IssuerdCore

/// Where and how e-mail is submitted (`ISSUERD_SMTP_*`, docs/configuration.md).
public struct SMTPSettings: Sendable {
    /// `smtp://host:587` (STARTTLS) or `smtps://host:465` (TLS from the first byte).
    public var url: String
    /// False only with `ISSUERD_SMTP_TLS=off`, for a relay on loopback: then the session stays
    /// in clear. Otherwise STARTTLS is required and a server that does not offer it is refused.
    public var requireTLS: Bool
    /// The AUTH user (`ISSUERD_SMTP_USER`); no AUTH when unset.
    public var user: String?
    /// The AUTH password (`ISSUERD_SMTP_PASSWORD` or `ISSUERD_SMTP_PASSWORD_FILE`).
    public var password: Redacted<String>?
    /// The envelope sender and `From:` address (`ISSUERD_SMTP_FROM`).
    public var from: String
    /// A PEM file of the CA that signed the relay's certificate (`ISSUERD_SMTP_CA_FILE`);
    /// the system's trust store when unset. The certificate and its name are always checked.
    public var caFile: String?
    /// How long one submission may take, connection included (the outbox's HTTP timeout).
    public var timeout: Duration

    /// Creates the value from every stored property.
    public init(
        url: String, requireTLS: Bool = true, user: String? = nil, password: Redacted<String>? = nil, from: String,
        caFile: String? = nil, timeout: Duration = .seconds(10)
    ) {
        self.url = url
        self.requireTLS = requireTLS
        self.user = user
        self.password = password
        self.from = from
        self.caFile = caFile
        self.timeout = timeout
    }

    /// Reads the `ISSUERD_SMTP_*` keys (called when `ISSUERD_EMAIL_PROVIDER=smtp`).
    ///
    /// - Throws: ``ConfigurationError`` naming the first missing or malformed key.
    package init(_ reader: ConfigurationReader, timeout: Duration) throws {
        let url = try reader.required("ISSUERD_SMTP_URL", hint: "required when ISSUERD_EMAIL_PROVIDER=smtp")
        guard url.hasPrefix("smtp://") || url.hasPrefix("smtps://"), url.utf8.count <= 512,
            !url.contains(where: { $0.isWhitespace })
        else {
            throw ConfigurationError(key: "ISSUERD_SMTP_URL", problem: "must be smtp://host:port or smtps://host:port")
        }
        let from = try reader.required("ISSUERD_SMTP_FROM", hint: "the sender address of step-up e-mail")
        guard MailAddress.isValid(from) else {
            throw ConfigurationError(
                key: "ISSUERD_SMTP_FROM", problem: "must be a plain address such as otp@bank.example")
        }
        let caFile = reader.string("ISSUERD_SMTP_CA_FILE")
        if let caFile, !FileManager.default.isReadableFile(atPath: caFile) {
            throw ConfigurationError(key: "ISSUERD_SMTP_CA_FILE", problem: "is not a readable file")
        }
        let user = reader.string("ISSUERD_SMTP_USER")
        let password = reader.string("ISSUERD_SMTP_PASSWORD")
        if user != nil, password == nil {
            throw ConfigurationError(
                key: "ISSUERD_SMTP_PASSWORD",
                problem: "is required with ISSUERD_SMTP_USER (or ISSUERD_SMTP_PASSWORD_FILE)")
        }
        self.init(
            url: url,
            requireTLS: try reader.choice("ISSUERD_SMTP_TLS", default: "required", from: ["required", "off"])
                == "required",
            user: user, password: password.map(Redacted.init), from: from, caFile: caFile, timeout: timeout)
    }
}

/// The plain `local@domain` addresses the submission accepts.
package enum MailAddress {
    /// Whether `text` is one plain address: printable ASCII, one `@`, no spaces, angle brackets
    /// or line breaks (nothing that could end a header or an SMTP command early).
    package static func isValid(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard (3...254).contains(bytes.count), bytes.filter({ $0 == 0x40 }).count == 1,
            let at = bytes.firstIndex(of: 0x40), at > 0, at < bytes.count - 1
        else { return false }
        return bytes.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != 0x3C && $0 != 0x3E && $0 != 0x22 && $0 != 0x2C }
    }

    /// The domain part of a valid address.
    package static func domain(of address: String) -> String {
        String(address.split(separator: "@").last ?? "localhost")
    }
}
