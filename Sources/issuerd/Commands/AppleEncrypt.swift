import Foundation
import IssuerdCore
import IssuerdCrypto

/// `issuerd apple encrypt`: the pass data an app would receive for one card.
enum AppleEncrypt {
    static func run(_ words: [String]) throws -> Int32 {
        let options = AppleCommand.trustOptions.union([
            "certificates", "nonce", "nonce-signature", "pan", "expiration", "name", "tav-key", "otp-key",
            "card-reference",
        ])
        let arguments = try Arguments(words, options: options, flags: ["no-validity-check", "enable-rsa-v2"])
        if arguments.wantsHelp {
            print(AppleCommand.usage)
            return 0
        }
        let verifier = try AppleCommand.verifier(arguments)
        let time = try AppleCommand.time(arguments)
        let scheme = try AppleCommand.scheme(arguments)
        let certificates = try arguments.required("certificates").split(separator: ",").map {
            try certificate(String($0))
        }
        let nonce = try decode(arguments.required("nonce"), "--nonce")
        let nonceSignature = try decode(arguments.required("nonce-signature"), "--nonce-signature")
        guard let pan = PrimaryAccountNumber(try panText(arguments.required("pan"))) else {
            throw UsageError("--pan must be 12 to 19 digits passing the Luhn check")
        }
        guard let expiration = CardExpiration(try arguments.required("expiration")) else {
            throw UsageError("--expiration must be MM/YY")
        }
        let payload: PassPayload
        do {
            payload = try PassPayload(
                primaryAccountNumber: pan, expiration: expiration, name: try arguments.required("name"), nonce: nonce,
                nonceSignature: nonceSignature)
        } catch let error as CryptoError {
            throw UsageError(error.reason)
        }
        let chain: ValidatedAppleChain
        switch verifier.verify(certificates, at: time, for: scheme) {
        case .valid(let valid): chain = valid
        case .invalid(let failure):
            try AppleCommand.printJSON([
                "error": [
                    "code": "certificate_chain_invalid", "detail": failure.code.rawValue, "message": failure.detail,
                ]
            ])
            return 1
        }
        let request = try ActivationDataRequest(
            primaryAccountNumber: pan, expiration: expiration,
            cardReference: arguments.option("card-reference") ?? "cli", nonce: nonce, now: time)
        let activationData = try activationProvider(arguments).activationData(for: request)
        var response = ["activationData": BinaryEncoding.base64String(activationData)]
        switch scheme {
        case .eccV2:
            let output = try ECCV2Encryptor().seal(payload, to: chain)
            response["encryptedPassData"] = BinaryEncoding.base64String(output.encryptedPassData)
            response["ephemeralPublicKey"] = BinaryEncoding.base64String(output.ephemeralPublicKey)
        case .rsaV2:
            let environment = ProcessInfo.processInfo.environment["ISSUERD_ENABLE_RSA_V2"]
            let enabled = arguments.flag("enable-rsa-v2") || environment == "1" || environment == "true"
            let output = try RSAV2Encryptor(enabled: enabled).seal(payload, to: chain)
            response["encryptedPassData"] = BinaryEncoding.base64String(output.encryptedPassData)
            response["wrappedKey"] = BinaryEncoding.base64String(output.wrappedKey)
        }
        try AppleCommand.printJSON(response)
        return 0
    }

    /// A file path, or hex/base64/base64url text.
    private static func certificate(_ item: String) throws -> [UInt8] {
        if FileManager.default.fileExists(atPath: item) {
            let certificates = try CertificateDecoding.certificates(inFile: try AppleCommand.readBytes(item))
            guard certificates.count == 1 else {
                throw UsageError("\(item) holds \(certificates.count) certificates; list them one by one")
            }
            return certificates[0]
        }
        return try decode(item, "a --certificates item")
    }

    private static func decode(_ text: String, _ label: String) throws -> [UInt8] {
        do { return try BinaryEncoding.decodeDetectingEncoding(text).bytes } catch let error as CryptoError {
            throw UsageError("\(label) is not hex, base64 or base64url: \(error.reason)")
        }
    }

    private static func panText(_ value: String) throws -> String {
        guard value == "-" else { return value }
        // Typed at a terminal, the PAN is not shown (nor left in the terminal's scroll-back).
        let interactive = TerminalEcho.isTerminal(STDIN_FILENO)
        if interactive { FileHandle.standardError.write(Data("PAN: ".utf8)) }
        let line = try TerminalEcho.withEchoDisabled(on: STDIN_FILENO) { readLine(strippingNewline: true) }
        guard let line else { throw UsageError("--pan - expects the PAN on standard input") }
        return line.trimmingCharacters(in: .whitespaces)
    }

    private static func activationProvider(_ arguments: Arguments) throws -> any ActivationDataProvider {
        if let path = arguments.option("tav-key") {
            return try MastercardTAVProvider(
                signingKey: try RSA.Signing.PrivateKey(pemRepresentation: try AppleCommand.readText(path)))
        }
        if let text = arguments.option("otp-key") {
            guard let bytes = try? BinaryEncoding.decodeBase64(text) else {
                throw UsageError("--otp-key must be base64")
            }
            return try IssuerOTPProvider(key: try SymmetricKey(bytes: bytes))
        }
        if let master = ProcessInfo.processInfo.environment["ISSUERD_MASTER_KEY"] {
            return try IssuerOTPProvider(
                key: try PANVault(keyRing: try MasterKeyRing(settingValue: master)).activationOTPKey())
        }
        throw UsageError("activation data needs --tav-key FILE.pem, --otp-key BASE64 or ISSUERD_MASTER_KEY")
    }
}
