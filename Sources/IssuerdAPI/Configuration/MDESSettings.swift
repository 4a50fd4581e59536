import Foundation
import IssuerdCrypto
import IssuerdMDES
import IssuerdService

/// Mastercard MDES, issuer side, inbound (api.md, "Mastercard MDES, issuer side"): the issuer
/// keys that open `encryptedPayload`s (`ISSUERD_MDES_ISSUER_KEYS`), Mastercard's encryption
/// certificate (`ISSUERD_MDES_MASTERCARD_CERT`) and the proxies that vouch for MDES's client
/// certificate (`ISSUERD_TRUSTED_PROXIES`). Nil in ``IssuerdConfiguration/mdes`` without issuer
/// keys: then no `/mdes/` route exists (404).
public struct MDESSettings: Sendable {
    /// The keys that open inbound payloads, found by fingerprint.
    public var issuerKeys: MDESIssuerKeyRing
    /// What issuerd encrypts for Mastercard is wrapped to this key; nil when unset.
    public var mastercardKey: MastercardEncryptionKey?
    /// The peers whose `X-Client-Verify: SUCCESS` is believed.
    public var trustedProxies: TrustedProxies

    /// Reads the settings; nil without `ISSUERD_MDES_ISSUER_KEYS`.
    ///
    /// - Throws: ``ConfigurationError`` naming the setting: an unreadable file, no RSA key of at
    ///   least 2048 bits, a certificate of another key, the same key twice, a malformed address.
    static func read(_ reader: ConfigurationReader) throws -> MDESSettings? {
        let proxiesText = reader.string("ISSUERD_TRUSTED_PROXIES") ?? "127.0.0.1,::1"
        let proxies: TrustedProxies
        do {
            proxies = try TrustedProxies(proxiesText)
        } catch {
            throw ConfigurationError(
                key: "ISSUERD_TRUSTED_PROXIES", problem: "must be comma-separated IP addresses or networks (\(error))")
        }
        guard let list = reader.string("ISSUERD_MDES_ISSUER_KEYS") else {
            if reader.string("ISSUERD_MDES_MASTERCARD_CERT") != nil {
                throw ConfigurationError(
                    key: "ISSUERD_MDES_MASTERCARD_CERT", problem: "is set but ISSUERD_MDES_ISSUER_KEYS is not")
            }
            return nil
        }
        var keys: [MDESIssuerKey] = []
        for path in list.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !path.isEmpty {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8), text.contains("-----BEGIN") else {
                throw ConfigurationError(
                    key: "ISSUERD_MDES_ISSUER_KEYS", problem: "\(path) is not a readable PEM file")
            }
            do {
                keys.append(try MDESIssuerKey(pemRepresentation: text))
            } catch {
                throw ConfigurationError(
                    key: "ISSUERD_MDES_ISSUER_KEYS",
                    problem: "\(path) holds no RSA private key of at least 2048 bits (or a certificate of another key)")
            }
        }
        let ring: MDESIssuerKeyRing
        do {
            ring = try MDESIssuerKeyRing(keys)
        } catch {
            throw ConfigurationError(key: "ISSUERD_MDES_ISSUER_KEYS", problem: "\(error)")
        }
        var mastercardKey: MastercardEncryptionKey?
        if let pem = try reader.pem("ISSUERD_MDES_MASTERCARD_CERT") {
            do {
                mastercardKey = try MastercardEncryptionKey(certificate: X509Certificate(pemRepresentation: pem))
            } catch {
                throw ConfigurationError(
                    key: "ISSUERD_MDES_MASTERCARD_CERT",
                    problem: "must be a PEM certificate of an RSA key of at least 2048 bits")
            }
        }
        return MDESSettings(issuerKeys: ring, mastercardKey: mastercardKey, trustedProxies: proxies)
    }
}
