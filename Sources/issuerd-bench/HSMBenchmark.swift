import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdPKCS11

/// `issuerd-bench hsm`: Mastercard TAV signing through PKCS#11 beside the same signing with an
/// in-process OpenSSL key, measured in the same run (one thread and every core), plus what an
/// HSM costs at start-up (unwrapping a data key) and per request for PANs (nothing: the opened
/// ring is in memory).
///
/// By default it makes a throwaway SoftHSM2 token in a temporary folder with fresh keys; with
/// `ISSUERD_PKCS11_MODULE`, `ISSUERD_PKCS11_TOKEN_LABEL` and `ISSUERD_PKCS11_PIN_FILE` set it uses
/// that token and the keys already there (`ISSUERD_PKCS11_SIGNING_KEY_LABEL`, default `issuerd-tav`;
/// `ISSUERD_PKCS11_WRAP_KEY_LABEL`, default `issuerd-pan-kek`), creating nothing.
enum HSMBenchmark {
    static let usage = """
        usage: issuerd-bench hsm [--seconds N]
          TAV signing through PKCS#11 vs in-process OpenSSL, 1 thread and all cores.
          Default: a throwaway SoftHSM2 token (Debian softhsm2) with fresh keys. With
          ISSUERD_PKCS11_MODULE, ISSUERD_PKCS11_TOKEN_LABEL and ISSUERD_PKCS11_PIN_FILE: that token
          and its existing keys (ISSUERD_PKCS11_SIGNING_KEY_LABEL, ISSUERD_PKCS11_WRAP_KEY_LABEL);
          nothing is created in it.

        """

    static func run(_ arguments: [String]) throws -> Int32 {
        if arguments.contains("--help") || arguments.contains("-h") {
            print(usage, terminator: "")
            return 0
        }
        var seconds = 2.0
        if let index = arguments.firstIndex(of: "--seconds"), index + 1 < arguments.count,
            let value = Double(arguments[index + 1]), value > 0
        {
            seconds = value
        }
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let environment = ProcessInfo.processInfo.environment
        let token: PKCS11Token
        let cleanup: () -> Void
        var tavLabel = "issuerd-bench-tav"
        var kekLabel = "issuerd-bench-kek"
        if let module = environment["ISSUERD_PKCS11_MODULE"], let label = environment["ISSUERD_PKCS11_TOKEN_LABEL"],
            let pinFile = environment["ISSUERD_PKCS11_PIN_FILE"]
        {
            token = try PKCS11Token(
                module: PKCS11Module.load(path: module), tokenLabel: label, pin: PKCS11PIN(contentsOfFile: pinFile),
                sessionCount: cores * 2)
            cleanup = {}
            tavLabel = environment["ISSUERD_PKCS11_SIGNING_KEY_LABEL"] ?? "issuerd-tav"
            kekLabel = environment["ISSUERD_PKCS11_WRAP_KEY_LABEL"] ?? "issuerd-pan-kek"
            print("issuerd-bench hsm — \(Date()) — \(cores) cores — token '\(label)' in \(module)")
        } else {
            let (made, folder) = try makeSoftHSMToken(sessions: cores * 2)
            token = made
            cleanup = { try? FileManager.default.removeItem(at: folder) }
            try token.createRSASigningKey(label: tavLabel)
            try token.createWrappingKey(label: kekLabel)
            print("issuerd-bench hsm — \(Date()) — \(cores) cores — throwaway SoftHSM2 token")
        }
        defer { cleanup() }

        let pan = PrimaryAccountNumber("5399999999999999")!
        let request = try ActivationDataRequest(
            primaryAccountNumber: pan, expiration: CardExpiration("03/29")!, cardReference: "card-1",
            nonce: [1, 2, 3, 4], now: Date())
        let inProcess = try MastercardTAVProvider(signingKey: RSA.Signing.PrivateKey(bits: 2048))
        let inHSM = try MastercardTAVProvider(
            signer: PKCS11Signer(signer: PKCS11RSASigner(token: token, label: tavLabel)))

        // Interleaved rounds, medians: the two sides see the same machine load.
        var rounds: [[Measurement]] = []
        for _ in 0..<3 {
            rounds.append([
                try rate(seconds: seconds, threads: 1) { _ = try inProcess.activationData(for: request) },
                try rate(seconds: seconds, threads: 1) { _ = try inHSM.activationData(for: request) },
                try rate(seconds: seconds, threads: cores) { _ = try inProcess.activationData(for: request) },
                try rate(seconds: seconds, threads: cores) { _ = try inHSM.activationData(for: request) },
            ])
        }
        let medians = (0..<4).map { column in
            rounds.map { $0[column] }.sorted { $0.perSecond < $1.perSecond }[rounds.count / 2]
        }
        let labels = [
            "in-process OpenSSL, 1 thread ", "PKCS#11, 1 thread            ", "in-process OpenSSL, \(cores) threads",
            "PKCS#11, \(cores) threads           ",
        ]
        for (index, measurement) in medians.enumerated() {
            let ratio =
                index % 2 == 1
                ? String(format: "   ×%.2f of OpenSSL", measurement.perSecond / medians[index - 1].perSecond) : ""
            print(
                String(
                    format: "TAV (RSA-2048), %@: %8.0f /s  %7.1f µs CPU each%@", labels[index], measurement.perSecond,
                    measurement.cpuMicros, ratio))
        }
        print(
            String(
                format:
                    "PKCS#11 overhead per TAV: %.1f µs CPU (what SoftHSM adds on the host; a hardware HSM signs on its own processors)",
                medians[1].cpuMicros - medians[0].cpuMicros))

        // Start-up: one unwrap per data key version; requests then open PANs from memory.
        let wrapped = try token.wrapNewDataKey(wrappingKeyLabel: kekLabel)
        var unwrapTimes: [Double] = []
        var ring: MasterKeyRing?
        for _ in 0..<20 {
            let start = DispatchTime.now().uptimeNanoseconds
            let key = try token.unwrapDataKey(wrapped, wrappingKeyLabel: kekLabel) { try SymmetricKey(bytes: $0) }
            unwrapTimes.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e3)
            ring = try MasterKeyRing(keys: [1: key])
        }
        let vault = PANVault(keyRing: ring!)
        let sealed = try vault.seal(pan, context: Array("card-1".utf8))
        let open = try rate(seconds: min(seconds, 1), threads: 1) {
            _ = try vault.open(sealed, context: Array("card-1".utf8))
        }.perSecond
        print(
            String(
                format: "data key unwrap (start-up, per version):        %8.1f µs (median)",
                unwrapTimes.sorted()[unwrapTimes.count / 2]))
        print(
            String(
                format: "PAN open from the unwrapped ring, 1 thread:     %8.0f /s   (no HSM call; locked memory: %@)",
                open, ring!.isMemoryLocked ? "yes" : "NO"))
        return 0
    }

    struct Measurement {
        /// Calls per second of wall time.
        var perSecond: Double
        /// Process CPU time per call (load on the machine does not inflate it).
        var cpuMicros: Double
    }

    private static func processCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// Calls per second of `body` on `threads` threads for about `seconds` (after a short
    /// warm-up), and the process CPU time per call.
    private static func rate(
        seconds: Double, threads: Int, _ body: @escaping @Sendable () throws -> Void
    ) throws -> Measurement {
        for _ in 0..<20 { try body() }
        let counts = Counter()
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(seconds * 1e9)
        let cpuStart = processCPUSeconds()
        let start = DispatchTime.now().uptimeNanoseconds
        DispatchQueue.concurrentPerform(iterations: threads) { _ in
            var done = 0
            var failed = 0
            while DispatchTime.now().uptimeNanoseconds < deadline {
                do { try body() } catch { failed += 1 }
                done += 1
            }
            counts.add(done: done, failed: failed)
        }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        let cpu = processCPUSeconds() - cpuStart
        guard counts.failed == 0 else { throw BenchmarkFailure("\(counts.failed) operations failed") }
        return Measurement(perSecond: Double(counts.done) / elapsed, cpuMicros: cpu / Double(max(counts.done, 1)) * 1e6)
    }

    /// A SoftHSM2 token in a new temporary folder (`SOFTHSM2_CONF` is set before the module loads).
    private static func makeSoftHSMToken(sessions: Int) throws -> (PKCS11Token, URL) {
        let module = "/usr/lib/softhsm/libsofthsm2.so"
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "issuerd-bench-softhsm-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(
            at: folder.appendingPathComponent("tokens"), withIntermediateDirectories: true)
        let configuration = folder.appendingPathComponent("softhsm2.conf")
        try "directories.tokendir = \(folder.appendingPathComponent("tokens").path)\nlog.level = ERROR\n".write(
            to: configuration, atomically: true, encoding: .utf8)
        setenv("SOFTHSM2_CONF", configuration.path, 1)
        let pin = UUID().uuidString.prefix(12).lowercased()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/softhsm2-util")
        // A throwaway token of a benchmark: its PIN on the command line exposes nothing.
        process.arguments = [
            "--init-token", "--free", "--label", "issuerd-bench", "--so-pin", "so-\(pin)", "--pin", String(pin),
        ]
        process.standardOutput = FileHandle.nullDevice
        do { try process.run() } catch {
            throw BenchmarkFailure("softhsm2-util is missing: install the Debian package softhsm2")
        }
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw BenchmarkFailure("softhsm2-util --init-token failed") }
        let token = try PKCS11Token(
            module: PKCS11Module.load(path: module), tokenLabel: "issuerd-bench", pin: PKCS11PIN(String(pin)),
            sessionCount: sessions)
        return (token, folder)
    }
}

/// The PKCS#11 signer as the TAV provider's signer.
private struct PKCS11Signer: RSASigningKey {
    let signer: PKCS11RSASigner
    func signature(for message: [UInt8]) throws -> [UInt8] { try signer.signature(for: message) }
}

private final class Counter: @unchecked Sendable {  // every access goes through the lock
    private let lock = NSLock()
    private var doneValue = 0
    private var failedValue = 0
    func add(done: Int, failed: Int) {
        lock.withLock {
            doneValue += done
            failedValue += failed
        }
    }
    var done: Int { lock.withLock { doneValue } }
    var failed: Int { lock.withLock { failedValue } }
}
