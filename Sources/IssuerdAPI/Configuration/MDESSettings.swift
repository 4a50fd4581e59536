import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdMDES

/// Mastercard MDES, issuer side, inbound (docs/networks.md): the issuer
/// keys that open `encryptedPayload`s (`ISSUERD_MDES_ISSUER_KEYS`), Mastercard's encryption
/// certificate (`ISSUERD_MDES_MASTERCARD_CERT`) and the proxies that vouch for MDES's client
/// certificate (`ISSUERD_TRUSTED_PROXIES`); issuer keys in the HSM by label
/// (`ISSUERD_MDES_ISSUER_KEY_LABELS`, opened with the HSM: ``HSMIssuerKeyUnwrapper/ring(_:hsm:)``).
/// Nil in ``IssuerdConfiguration/mdes`` without issuer keys: then no `/mdes/` route exists (404).
public struct MDESSettings: Sendable {
    /// The keys from PEM files that open inbound payloads.
    public var issuerKeys: [MDESIssuerKey]
    /// The HSM's issuer keys by label, each with the PEM text of its certificate when given.
    public var keyLabels: [(label: String, certificatePEM: String?)]
    /// What issuerd encrypts for Mastercard is wrapped to this key; nil when unset.
    public var mastercardKey: MastercardEncryptionKey?
    /// The peers whose `X-Client-Verify: SUCCESS` is believed.
    public var trustedProxies: TrustedProxies

    /// Reads the settings; nil without `ISSUERD_MDES_ISSUER_KEYS`.
    ///
    /// - Throws: ``ConfigurationError`` naming the setting: an unreadable file, no RSA key of at
    ///   least 2048 bits, a certificate of another key, the same key twice, a malformed address.
    static func read(_ reader: ConfigurationReader, hsm: Bool) throws -> MDESSettings? {
        let proxiesText = reader.string("ISSUERD_TRUSTED_PROXIES") ?? "127.0.0.1,::1"
        let proxies: TrustedProxies
        do {
            proxies = try TrustedProxies(proxiesText)
        } catch {
            throw ConfigurationError(
                key: "ISSUERD_TRUSTED_PROXIES", problem: "must be comma-separated IP addresses or networks (\(error))")
        }
        let labels = try keyLabels(reader, hsm: hsm)
        let list = reader.string("ISSUERD_MDES_ISSUER_KEYS") ?? ""
        // Without issuer keys there are no issuer web services; Mastercard's certificate may still be
        // set for the Google Pay push (GooglePaySettings reads it for that).
        guard !list.isEmpty || !labels.isEmpty else { return nil }
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
        if labels.isEmpty {  // with labels, checked once the HSM's keys join (ServiceContext)
            do {
                _ = try MDESIssuerKeyRing(keys)
            } catch {
                throw ConfigurationError(key: "ISSUERD_MDES_ISSUER_KEYS", problem: "\(error)")
            }
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
        return MDESSettings(
            issuerKeys: keys, keyLabels: labels, mastercardKey: mastercardKey, trustedProxies: proxies)
    }

    /// `label` or `label=/path/of/its/certificate.pem`, comma-separated; only with an HSM.
    private static func keyLabels(
        _ reader: ConfigurationReader, hsm: Bool
    ) throws -> [(label: String, certificatePEM: String?)] {
        let key = "ISSUERD_MDES_ISSUER_KEY_LABELS"
        guard let text = reader.string(key) else { return [] }
        guard hsm else { throw ConfigurationError(key: key, problem: "needs ISSUERD_PKCS11_MODULE") }
        var labels: [(label: String, certificatePEM: String?)] = []
        for entry in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !entry.isEmpty {
            let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
            guard (1...64).contains(parts[0].utf8.count) else {
                throw ConfigurationError(key: key, problem: "a label must be 1 to 64 characters")
            }
            var certificate: String?
            if parts.count == 2 {
                guard let pem = try? String(contentsOfFile: parts[1], encoding: .utf8),
                    pem.contains("-----BEGIN CERTIFICATE-----")
                else { throw ConfigurationError(key: key, problem: "\(parts[1]) is not a readable PEM certificate") }
                certificate = pem
            }
            labels.append((parts[0], certificate))
        }
        return labels
    }
}
