import Foundation
import IssuerdCrypto

/// `issuerd dev …`: development helpers.
enum DevCommand: CommandDefinition {
    static let name = "dev"
    static let summary = "development helpers (dev pki: an Apple-shaped test PKI; dev token: an app JWT)"
    static let usage = """
        issuerd dev pki --out DIR [--at ISO8601]
        issuerd dev token --customer ID [--ttl 1h]

        Generates an Apple-shaped development PKI in DIR: a root (root.pem/.der), an intermediate
        named "Apple Worldwide Developer Relations CA - G2", a P-256 leaf with the Apple marker OID
        1.2.840.113635.100.6.39 (critical) and keyEncipherment + keyAgreement (leaf-ecc*), an RSA
        leaf for RSA_V2 (leaf-rsa*), a Mastercard TAV signing key (tav-signing-key.pem), chain
        files, and every private key (mode 0600). Trust it with --trust DIR/root.pem or
        ISSUERD_APPLE_TRUST=DIR/root.pem. Never use these keys in production.

        dev token prints an HS256 issuer-app JWT for customer ID signed with
        ISSUERD_APP_JWT_SECRET (see issuerd dev token --help).
        """

    static func run(_ words: [String]) throws -> Int32 {
        try runSubcommand(words, ["pki": writePKI, "token": DevTokenCommand.run])
    }

    private static func writePKI(_ words: [String]) throws -> Int32 {
        let arguments = try Arguments(words, options: ["out", "at"])
        if arguments.wantsHelp {
            print(usage)
            return 0
        }
        let directory = URL(fileURLWithPath: try arguments.required("out"))
        let now = try AppleCommand.time(arguments)
        let pki = try DevelopmentPKI.generate(now: now)
        let files = try pki.write(to: directory)
        try AppleCommand.printJSON([
            "directory": directory.path, "files": files.joined(separator: ","),
            "trust": directory.appendingPathComponent("root.pem").path,
        ])
        return 0
    }
}
