import Foundation
import IssuerdCrypto

/// `issuerd apple verify-chain`: a JSON verdict on certificate files.
enum AppleVerifyChain {
    struct Verdict: Encodable {
        var valid: Bool
        var trust: String
        var at: String
        var code: String?
        var detail: String?
        var certificateIndex: Int?
        var leafCommonName: String?
        var leafFingerprintSHA256: String?
        var leafNotBefore: String?
        var leafNotAfter: String?
        var intermediateCommonName: String?
    }

    static func run(_ words: [String]) throws -> Int32 {
        let arguments = try Arguments(words, options: AppleCommand.trustOptions, flags: ["no-validity-check"])
        if arguments.wantsHelp {
            print(AppleCommand.usage)
            return 0
        }
        guard !arguments.positionals.isEmpty else { throw UsageError("give at least one certificate file") }
        let verifier = try AppleCommand.verifier(arguments)
        let time = try AppleCommand.time(arguments)
        let scheme = try AppleCommand.scheme(arguments)
        var certificates: [[UInt8]] = []
        for path in arguments.positionals {
            do {
                certificates += try CertificateDecoding.certificates(inFile: try AppleCommand.readBytes(path))
            } catch let error as CryptoError {
                throw CommandFailure("\(path): \(error.reason)")
            }
        }
        let iso = ISO8601DateFormatter()
        var verdict = Verdict(valid: false, trust: verifier.trust.name, at: iso.string(from: time))
        switch verifier.verify(certificates, at: time, for: scheme) {
        case .valid(let chain):
            verdict.valid = true
            verdict.leafCommonName = chain.leafCommonName
            verdict.leafFingerprintSHA256 = chain.leafFingerprintHex
            verdict.leafNotBefore = iso.string(from: chain.leafNotBefore)
            verdict.leafNotAfter = iso.string(from: chain.leafNotAfter)
            verdict.intermediateCommonName = chain.intermediateCommonName
        case .invalid(let failure):
            verdict.code = failure.code.rawValue
            verdict.detail = failure.detail
            verdict.certificateIndex = failure.certificateIndex
        }
        try AppleCommand.printJSON(verdict)
        return verdict.valid ? 0 : 1
    }
}
