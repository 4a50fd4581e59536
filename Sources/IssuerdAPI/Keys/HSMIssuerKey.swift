import IssuerdCore
import IssuerdCrypto
import IssuerdKeys
import IssuerdMDES
import IssuerdPKCS11

/// An MDES issuer encryption key in the HSM (`ISSUERD_MDES_ISSUER_KEY_LABELS`): the one-time AES
/// key of an inbound `encryptedPayload` is decrypted in the token (`CKM_RSA_PKCS_OAEP` with
/// SHA-256 or SHA-512, or `CKM_RSA_PKCS`); the RSA private key never leaves it.
struct HSMIssuerKeyUnwrapper: RSAKeyUnwrapping {
    let decrypter: PKCS11RSADecrypter

    var keySizeInBits: Int { decrypter.bits }

    func unwrapKey(_ wrapped: [UInt8], padding: RSA.Encryption.Padding) throws -> SymmetricKey {
        guard wrapped.count == (decrypter.bits + 7) / 8 else {
            throw MDESKeyError("a wrapped key is not the modulus' size")
        }
        let mechanism: PKCS11RSADecrypter.Padding =
            switch padding {
            case .oaepSHA256: .oaepSHA256
            case .oaepSHA512: .oaepSHA512
            case .pkcs1v15: .pkcs1v15
            }
        var bytes = try decrypter.decrypt(wrapped, padding: mechanism)
        defer { for index in bytes.indices { bytes[index] = 0 } }
        return try SymmetricKey(bytes: bytes)
    }

    /// The issuer keys of `settings`: the PEM files' and, with an HSM, the labelled ones (their
    /// public key read from the token, their certificate from the file named after `=`).
    ///
    /// - Throws: ``ConfigurationError`` naming `ISSUERD_MDES_ISSUER_KEY_LABELS` or
    ///   `ISSUERD_MDES_ISSUER_KEYS`.
    static func ring(_ settings: MDESSettings, hsm: HSMKeyStore?) throws -> MDESIssuerKeyRing {
        var keys = settings.issuerKeys
        for entry in settings.keyLabels {
            guard let hsm else {
                throw ConfigurationError(key: "ISSUERD_MDES_ISSUER_KEY_LABELS", problem: "needs ISSUERD_PKCS11_MODULE")
            }
            do {
                let decrypter = try PKCS11RSADecrypter(token: hsm.token, label: entry.label)
                let (modulus, exponent) = try hsm.token.rsaPublicKey(label: entry.label)
                let publicKey = try RSA.Encryption.PublicKey(
                    pemRepresentation: try RSA.Signing.PublicKey(modulus: modulus, exponent: exponent).pemRepresentation
                )
                keys.append(
                    try MDESIssuerKey(
                        unwrapper: HSMIssuerKeyUnwrapper(decrypter: decrypter), publicKey: publicKey,
                        certificate: try entry.certificatePEM.map { try X509Certificate(pemRepresentation: $0) }))
            } catch let error as PKCS11Error {
                throw ConfigurationError(key: "ISSUERD_MDES_ISSUER_KEY_LABELS", problem: "'\(entry.label)': \(error)")
            } catch {
                throw ConfigurationError(
                    key: "ISSUERD_MDES_ISSUER_KEY_LABELS",
                    problem: "'\(entry.label)': its certificate is unreadable or certifies another key")
            }
        }
        do {
            return try MDESIssuerKeyRing(keys)
        } catch {
            throw ConfigurationError(key: "ISSUERD_MDES_ISSUER_KEYS", problem: "\(error)")
        }
    }
}
