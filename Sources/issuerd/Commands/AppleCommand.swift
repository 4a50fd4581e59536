import Foundation
import IssuerdCrypto

/// `issuerd apple …`: support tools for Apple Pay in-app provisioning.
enum AppleCommand: CommandDefinition {
    static let name = "apple"
    static let summary = "verify an Apple certificate chain, or produce the pass data an app would receive"
    static let usage = """
        issuerd apple verify-chain [--trust production|sandbox|FILE.pem] [--sandbox-root FILE.pem]
                                   [--intermediate-name NAME] [--at ISO8601] [--no-validity-check]
                                   [--scheme ECC_V2|RSA_V2] CERT...
        issuerd apple encrypt [--trust …] [--at ISO8601] --certificates CERT,CERT
                              --nonce HEX --nonce-signature HEX --pan PAN|- --expiration MM/YY --name NAME
                              [--scheme ECC_V2|RSA_V2] [--enable-rsa-v2]
                              [--tav-key FILE.pem | --otp-key BASE64] [--card-reference REF]

        verify-chain reads certificate files (DER, PEM with one or more certificates, or one
        base64/hex text), checks the chain as the provisioning service does and prints a JSON
        verdict: exit 0 when valid, 1 when not.

        encrypt verifies the chain, seals the pass payload (ECC_V2 by default) and prints
        {"encryptedPassData","activationData","ephemeralPublicKey"|"wrappedKey"} in base64.
        CERT items are file paths or hex/base64/base64url text. --pan - reads the PAN from stdin
        so it stays out of the process list (typed at a terminal, it is not echoed). Activation data is a Mastercard TAV v3 with
        --tav-key, otherwise the issuer OTP keyed by --otp-key or ISSUERD_MASTER_KEY.

        --trust: production (Apple Root CA - G3, built in), sandbox (Apple does not publish the
        sandbox root: give it with --sandbox-root), or a PEM root file (custom; add
        --intermediate-name to require a name). Default: $ISSUERD_APPLE_TRUST or production.
        --at: the verification time (default now). RSA_V2 is off unless --enable-rsa-v2 or
        ISSUERD_ENABLE_RSA_V2=1 (it is unverified against Apple, see docs/crypto.md).
        """

    static func run(_ words: [String]) throws -> Int32 {
        guard let sub = words.first else {
            print(usage)
            return 2
        }
        switch sub {
        case "verify-chain": return try AppleVerifyChain.run(Array(words.dropFirst()))
        case "encrypt": return try AppleEncrypt.run(Array(words.dropFirst()))
        case "--help", "-h", "help":
            print(usage)
            return 0
        default: throw UsageError("unknown subcommand '\(sub)' (verify-chain or encrypt)")
        }
    }

    /// Options shared by both subcommands.
    static let trustOptions: Set<String> = ["trust", "sandbox-root", "intermediate-name", "at", "scheme"]

    /// Builds the verifier named by `--trust` (or `ISSUERD_APPLE_TRUST`).
    static func verifier(_ arguments: Arguments) throws -> AppleCertificateChainVerifier {
        let trust =
            arguments.option("trust") ?? ProcessInfo.processInfo.environment["ISSUERD_APPLE_TRUST"] ?? "production"
        let profile: AppleTrustProfile
        switch trust {
        case "production":
            profile = .production
        case "sandbox":
            guard let root = arguments.option("sandbox-root") else {
                throw UsageError(
                    "--trust sandbox needs --sandbox-root FILE.pem: Apple does not publish the sandbox root")
            }
            profile = try .sandbox(rootPEM: try readText(root))
        default:
            profile = try .custom(
                rootPEM: try readText(trust), requiredIntermediateCommonName: arguments.option("intermediate-name"))
        }
        return try AppleCertificateChainVerifier(
            trust: profile, checkValidity: !arguments.flag("no-validity-check"), cacheCapacity: 0)
    }

    /// `--at`, or now.
    static func time(_ arguments: Arguments) throws -> Date {
        guard let text = arguments.option("at") else { return Date() }
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withFullDate]
        if let date = formatter.date(from: text) { return date }
        throw UsageError("--at must be ISO 8601, e.g. 2020-01-01T00:00:00Z")
    }

    /// `--scheme`, default ECC_V2.
    static func scheme(_ arguments: Arguments) throws -> EncryptionScheme {
        let text = arguments.option("scheme") ?? "ECC_V2"
        guard let scheme = EncryptionScheme(rawValue: text.uppercased()) else {
            throw UsageError("--scheme must be ECC_V2 or RSA_V2")
        }
        return scheme
    }

    static func readText(_ path: String) throws -> String {
        String(decoding: try readBytes(path), as: UTF8.self)
    }

    static func readBytes(_ path: String) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else { throw CommandFailure("cannot read \(path)") }
        guard data.count <= CertificateDecoding.maximumFileLength else {
            throw CommandFailure("\(path) is larger than \(CertificateDecoding.maximumFileLength) bytes")
        }
        return Array(data)
    }

    /// Prints a JSON object on one line, keys sorted, slashes unescaped.
    static func printJSON(_ value: some Encodable) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        print(String(decoding: try encoder.encode(value), as: UTF8.self))
    }
}
