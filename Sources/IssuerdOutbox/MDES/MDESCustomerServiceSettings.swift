import Foundation
import IssuerdCore
import IssuerdMDES

/// Where and as whom issuerd calls Mastercard's Customer Service API (`ISSUERD_MDES_CSAPI_URL`,
/// `ISSUERD_MDES_CONSUMER_KEY`, `ISSUERD_MDES_SIGNING_KEY` or `ISSUERD_MDES_SIGNING_KEY_LABEL`,
/// `ISSUERD_MDES_AUDIT_*`; docs/configuration.md).
///
/// Without `ISSUERD_MDES_CSAPI_URL` there are no outbound calls: `mdes_csapi` messages stay
/// pending in the outbox until it is set. With it, the consumer key, one signing key and the
/// three `AuditInfo` values are required.
public struct MDESCustomerServiceSettings: Sendable {
    /// The API's base up to and including `/v2`.
    public var baseURL: URL
    /// The Mastercard Developers project's consumer key.
    public var consumerKey: String
    /// Where the OAuth signing key is.
    public var signingKey: SigningKey
    /// Every request's `AuditInfo`.
    public var auditInfo: AuditInfo

    /// The OAuth 1.0a RSA signing key.
    public enum SigningKey: Sendable {
        /// PEM text (`ISSUERD_MDES_SIGNING_KEY`, inline or a file path).
        case pem(Redacted<String>)
        /// A key label in the PKCS#11 token (`ISSUERD_MDES_SIGNING_KEY_LABEL`).
        case hsm(label: String)
    }

    /// Reads the settings; nil when `ISSUERD_MDES_CSAPI_URL` is unset.
    ///
    /// - Throws: ``ConfigurationError`` naming the first missing or malformed setting.
    package static func read(_ reader: ConfigurationReader) throws -> MDESCustomerServiceSettings? {
        let pem = try reader.pem("ISSUERD_MDES_SIGNING_KEY")
        let label = reader.string("ISSUERD_MDES_SIGNING_KEY_LABEL")
        if pem != nil, label != nil {
            throw ConfigurationError(
                key: "ISSUERD_MDES_SIGNING_KEY_LABEL", problem: "set either it or ISSUERD_MDES_SIGNING_KEY, not both")
        }
        if let label,
            !(1...64).contains(label.utf8.count)
                || !label.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value < 0x7F })
        {
            throw ConfigurationError(
                key: "ISSUERD_MDES_SIGNING_KEY_LABEL", problem: "must be 1 to 64 printable ASCII characters")
        }
        guard let text = reader.string("ISSUERD_MDES_CSAPI_URL") else { return nil }
        let url = try ConfigurationReader.httpURL(text, key: "ISSUERD_MDES_CSAPI_URL")
        guard url.query == nil, url.fragment == nil else {
            throw ConfigurationError(
                key: "ISSUERD_MDES_CSAPI_URL", problem: "must be the API's base up to /v2, without a query")
        }
        let hint = "required when ISSUERD_MDES_CSAPI_URL is set"
        let consumerKey = try reader.required(
            "ISSUERD_MDES_CONSUMER_KEY", hint: "the Mastercard Developers consumer key, \(hint)")
        guard (1...256).contains(consumerKey.utf8.count),
            consumerKey.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F && $0 != "\"" && $0 != "," })
        else {
            throw ConfigurationError(
                key: "ISSUERD_MDES_CONSUMER_KEY",
                problem: "must be 1 to 256 printable ASCII characters without quotes or commas")
        }
        let signingKey: SigningKey
        if let pem {
            signingKey = .pem(Redacted(pem))
        } else if let label {
            signingKey = .hsm(label: label)
        } else {
            throw ConfigurationError(
                key: "ISSUERD_MDES_SIGNING_KEY",
                problem: "\(hint) (a PEM RSA private key), or ISSUERD_MDES_SIGNING_KEY_LABEL for a key in the HSM")
        }
        let userID = try reader.required("ISSUERD_MDES_AUDIT_USER_ID", hint: hint)
        let userName = try reader.required("ISSUERD_MDES_AUDIT_USER_NAME", hint: hint)
        let organization = try reader.required("ISSUERD_MDES_AUDIT_ORGANIZATION", hint: hint)
        let auditInfo: AuditInfo
        do {
            auditInfo = try AuditInfo(userID: userID, userName: userName, organization: organization)
        } catch {
            let key =
                !(4...50).contains(userID.count) || userID.contains(where: \.isNewline)
                ? "ISSUERD_MDES_AUDIT_USER_ID"
                : !(4...200).contains(userName.count) || userName.contains(where: \.isNewline)
                    ? "ISSUERD_MDES_AUDIT_USER_NAME" : "ISSUERD_MDES_AUDIT_ORGANIZATION"
            throw ConfigurationError(key: key, problem: "\(error)")
        }
        return MDESCustomerServiceSettings(
            baseURL: url, consumerKey: consumerKey, signingKey: signingKey, auditInfo: auditInfo)
    }
}
