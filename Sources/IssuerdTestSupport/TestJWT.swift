import Foundation
import IssuerdCrypto

/// HS256 JSON Web Tokens with any claims, for tests of what a verifier refuses (a missing
/// `iat`, an odd `exp`): tokens the product's own minting would never make.
public enum TestJWT {
    /// A compact HS256 token over `claims` (sorted keys), signed with `secret`.
    public static func hs256(_ claims: [String: Any], secret: String) throws -> String {
        let header = BinaryEncoding.base64URLString(Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
        let payload = BinaryEncoding.base64URLString(
            Array(try JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys])))
        let mac = HMACSHA256.authenticationCode(
            for: Array((header + "." + payload).utf8), using: try SymmetricKey(bytes: Array(secret.utf8)))
        return header + "." + payload + "." + BinaryEncoding.base64URLString(mac)
    }
}
