import Foundation
import IssuerdCore
import IssuerdCrypto

/// `issuerd-bench crypto`: ECC_V2 seal throughput (one thread, all cores) and chain
/// validation latency (cold, cached), against `openssl speed ecdhp256` measured in the same run.
///
/// Every figure is the median of several timed batches after a warm-up. Targets (docs/performance.md):
/// one-thread seal rate ≥ 0.5 × OpenSSL's ECDH rate; cached validation < 5 µs.
enum CryptoBenchmark {
    static func run() throws -> Int32 {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        print("issuerd-bench crypto — \(Date()) — \(cores) cores")
        let now = Date()
        let pki = try DevelopmentPKI.generate(now: now)
        let certificates = [pki.eccLeaf.certificateDER, pki.intermediate.certificateDER]
        let cached = try AppleCertificateChainVerifier(trust: try pki.trustProfile)
        let cold = try AppleCertificateChainVerifier(trust: try pki.trustProfile, cacheCapacity: 0)
        guard let chain = cached.verify(certificates, at: now).chain,
            let pan = PrimaryAccountNumber("5399999999999999"), let expiry = CardExpiration("03/29")
        else { throw BenchmarkFailure("the development chain did not verify") }
        let payload = try PassPayload(
            primaryAccountNumber: pan, expiration: expiry, name: "홍길동", nonce: [0x9c, 0x02, 0x30, 0x92],
            nonceSignature: try SecureRandom.bytes(count: 71))
        let encryptor = ECCV2Encryptor()

        // Seals, one thread.
        let sealBatch = 1000
        _ = try timeBatches(count: 2, size: sealBatch) { _ = try encryptor.seal(payload, to: chain) }
        let oneThread = try timeBatches(count: 7, size: sealBatch) { _ = try encryptor.seal(payload, to: chain) }
        let sealRate = Double(sealBatch) / median(oneThread)
        print(String(format: "ECC_V2 seal, 1 thread:        %9.0f seals/s   (%.1f µs each)", sealRate, 1e6 / sealRate))

        try printBreakdown(payload: payload, chain: chain)

        // Seals, every core at once.
        var allRates: [Double] = []
        for _ in 0..<5 {
            let start = DispatchTime.now().uptimeNanoseconds
            let failures = Failures()
            DispatchQueue.concurrentPerform(iterations: cores) { _ in
                for _ in 0..<sealBatch {
                    do { _ = try encryptor.seal(payload, to: chain) } catch { failures.note() }
                }
            }
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            guard failures.count == 0 else { throw BenchmarkFailure("\(failures.count) seals failed") }
            allRates.append(Double(cores * sealBatch) / seconds)
        }
        let parallelRate = median(allRates)
        print(
            String(
                format: "ECC_V2 seal, %d threads:       %9.0f seals/s   (×%.2f)", cores, parallelRate,
                parallelRate / sealRate))

        // Chain validation.
        _ = try timeBatches(count: 1, size: 100) { _ = cold.verify(certificates, at: now) }
        let coldTimes = try timeBatches(count: 7, size: 200) {
            guard cold.verify(certificates, at: now).chain != nil else {
                throw BenchmarkFailure("cold verification failed")
            }
        }
        let cachedTimes = try timeBatches(count: 7, size: 100_000) {
            guard cached.verify(certificates, at: now).chain != nil else {
                throw BenchmarkFailure("cached verification failed")
            }
        }
        let coldMicros = median(coldTimes) / 200 * 1e6
        let cachedMicros = median(cachedTimes) / 100_000 * 1e6
        print(String(format: "chain validation, cold:       %9.1f µs", coldMicros))
        print(
            String(
                format: "chain validation, cached:     %9.2f µs   (target < 5 µs: %@)", cachedMicros,
                cachedMicros < 5 ? "met" : "MISSED"))

        // The reference, in the same run.
        if let reference = opensslECDHRate() {
            let ratio = sealRate / reference
            print(String(format: "openssl speed ecdhp256:       %9.0f op/s (1 thread)", reference))
            print(
                String(
                    format: "ratio seal/ECDH, 1 thread:    %9.2f      (target ≥ 0.50: %@)", ratio,
                    ratio >= 0.5 ? "met" : "MISSED"))
        } else {
            print("openssl speed ecdhp256: not available (install the openssl CLI)")
        }
        return 0
    }

    /// Where a seal's time goes, one step at a time (medians, µs per call).
    private static func printBreakdown(payload: PassPayload, chain: ValidatedAppleChain) throws {
        guard case .p256(let recipient) = chain.recipientKey else { return }
        let ephemeral = try P256.KeyAgreement.PrivateKey()
        let secret = try ephemeral.sharedSecretFromKeyAgreement(with: recipient)
        let key = try ConcatenationKDF.deriveKey(from: secret, otherInfo: [1])
        let plaintext = payload.jsonBytes()
        let nonce = [UInt8](repeating: 0, count: 12)
        // The seal's two multiplications go through the leaf's table once it has one; OpenSSL's
        // own key generation and ECDH are shown for comparison (a key's first seal costs an ECDH).
        let steps: [(String, () throws -> Void)] = [
            ("EVP P-256 key generation", { _ = try P256.KeyAgreement.PrivateKey() }),
            ("EVP ECDH with the leaf key", { _ = try ephemeral.sharedSecretFromKeyAgreement(with: recipient) }),
            ("concatenation KDF", { _ = try ConcatenationKDF.deriveKey(from: secret, otherInfo: [1, 2, 3]) }),
            ("AES-256-GCM of the payload", { _ = try AES256GCM.seal(plaintext, using: key, nonce: nonce) }),
            ("payload JSON", { _ = payload.jsonBytes() }),
        ]
        for (label, body) in steps {
            let size = 2000
            let times = try timeBatches(count: 5, size: size, body)
            print(
                "  " + label.padding(toLength: 28, withPad: " ", startingAt: 0)
                    + String(format: "%8.2f µs", median(times) / Double(size) * 1e6))
        }
    }

    /// Runs `count` batches of `size` calls and returns each batch's seconds.
    private static func timeBatches(count: Int, size: Int, _ body: () throws -> Void) throws -> [Double] {
        var times: [Double] = []
        for _ in 0..<count {
            let start = DispatchTime.now().uptimeNanoseconds
            for _ in 0..<size { try body() }
            times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
        }
        return times
    }

    private static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted[sorted.count / 2]
    }

    /// `openssl speed -seconds 3 ecdhp256`: the last number on the nistp256 line is op/s.
    private static func opensslECDHRate() -> Double? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl", "speed", "-seconds", "3", "ecdhp256"]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return nil }
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard let line = output.split(separator: "\n").last(where: { $0.contains("ecdh") && $0.contains("nistp256") })
        else { return nil }
        return line.split(separator: " ").last.flatMap { Double($0) }
    }
}

/// Counts failures across the worker threads.
private final class Failures: @unchecked Sendable {  // every access goes through the lock
    private let lock = NSLock()
    private var value = 0
    func note() { lock.withLock { value += 1 } }
    var count: Int { lock.withLock { value } }
}

/// A benchmark that could not run as intended.
struct BenchmarkFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
