import Foundation
import IssuerdAPI
import IssuerdAuth
import IssuerdCrypto

/// The credentials read from request headers before anything is verified: the TSP's
/// `X-Issuerd-Signature` and the issuer app's bearer JWT. Header bytes reach issuerd as text
/// decoded from UTF-8 (invalid bytes replaced), as here.
enum HeaderFuzzing {
    /// `t=<seconds>,v1=<hex>[,v1=<hex>…]`: a header that parses holds a positive time and one
    /// to four 32-byte signatures, and prints back to a header that parses to the same.
    static func tspSignature(_ bytes: [UInt8]) throws(FuzzFailure) {
        let header = String(decoding: bytes, as: UTF8.self)
        guard let signature = TSPSignature(header: header) else { return }
        guard signature.timestamp > 0, (1...4).contains(signature.signatures.count),
            signature.signatures.allSatisfy({ $0.count == 32 })
        else {
            throw FuzzFailure("parsed to t=\(signature.timestamp) with \(signature.signatures.map(\.count)) bytes")
        }
        let printed =
            (["t=\(signature.timestamp)"] + signature.signatures.map { "v1=" + BinaryEncoding.hexString($0) })
            .joined(separator: ",")
        guard TSPSignature(header: printed) == signature else {
            throw FuzzFailure("\(printed) does not parse back to what it was printed from")
        }
        // The bytes the HMAC covers start with the time as the header gave it.
        let payload = TSPSignature.signedPayload(timestamp: signature.timestamp, body: [0x7B])
        guard payload == Array("\(signature.timestamp).{".utf8) else {
            throw FuzzFailure("signed payload \(payload) for t=\(signature.timestamp)")
        }
    }

    /// A compact JWS: what parses has three parts, signs its first two as sent, and reads the
    /// header and claims as `JSONSerialization` reads them (the parser's fast pass and its
    /// fallback must agree); then both signature checks run on it, as the verifier would.
    static func appJWT(_ bytes: [UInt8]) throws(FuzzFailure) {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let token = JWT(compact: text) else { return }
        let parts = text.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw FuzzFailure("parsed a token of \(parts.count) parts") }
        guard token.signingInput.elementsEqual(text.utf8.prefix(parts[0].count + 1 + parts[1].count)) else {
            throw FuzzFailure("the signing input is not the token's first two parts")
        }
        guard let header = object(parts[0]), let claims = object(parts[1]) else {
            throw FuzzFailure("parsed a token whose header or claims JSONSerialization refuses")
        }
        guard token.algorithm == header["alg"] as? String else {
            throw FuzzFailure("alg \(token.algorithm), JSONSerialization \(String(describing: header["alg"]))")
        }
        guard token.subject == claims["sub"] as? String else {
            throw FuzzFailure("sub \(String(describing: token.subject)), JSONSerialization another")
        }
        for (name, value) in [("exp", token.expiresAt), ("nbf", token.notBefore)] {
            let reference = (claims[name] as? NSNumber)?.doubleValue
            // A boolean is a number to JSONSerialization only (1 or 0: long expired either way).
            guard value == reference || (value == nil && claims[name] is Bool) else {
                throw FuzzFailure(
                    "\(name) \(String(describing: value)), JSONSerialization \(String(describing: reference))")
            }
        }
        _ = HMACSHA256.isValidAuthenticationCode(token.signature, authenticating: token.signingInput, using: hmacKey)
        if let signature = try? P256.Signing.ECDSASignature(rawRepresentation: token.signature) {
            _ = publicKey.isValidSignature(signature, for: token.signingInput)
        }
    }

    /// The fixed keys the signature checks use (the seed corpus's tokens are signed with them).
    static let hmacSecret = "issuerd-fuzz-hs256-secret"
    static let hmacKey = try! SymmetricKey(bytes: Array(hmacSecret.utf8))
    static let privateKey = try! P256.Signing.PrivateKey(rawRepresentation: (1...32).map { UInt8($0) })
    static let publicKey = privateKey.publicKey

    private static func object(_ part: Substring.UTF8View) -> [String: Any]? {
        guard let bytes = try? BinaryEncoding.decodeBase64URL(Substring(part)) else { return nil }
        return (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any]
    }
}
