import IssuerdCrypto
import IssuerdRisk

/// How ruleset versions are computed in production: SHA-256 over the canonical bytes of every
/// rule and list file (``RulesetContent/canonicalBytes(of:)``), written `sha256:<hex>`.
///
/// IssuerdRisk takes the hasher as a parameter so that it stays free of C libraries; every
/// command and the server use this one, so a version printed by `issuerd rules check` is the
/// version stored with decisions.
public enum RulesetVersioning {
    /// `sha256:` followed by 64 lowercase hex digits.
    public static let sha256: ContentHasher = { bytes in
        "sha256:" + BinaryEncoding.hexString(SHA256.hash(bytes))
    }
}
