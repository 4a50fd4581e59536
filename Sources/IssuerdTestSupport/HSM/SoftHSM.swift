import Foundation

/// SoftHSM2 tokens for tests: one configuration and token folder per test process, under the
/// process's ``TestScratch`` folder (removed when the process exits), selected with
/// `SOFTHSM2_CONF` before the module is first loaded.
///
/// SoftHSM reads its token folder once, in `C_Initialize`: a token initialised later stays
/// invisible to a loaded module. So the first call initialises a stock of tokens
/// (``stockSize``, about 0.1 s each) and ``makeToken()`` hands them out.
public enum SoftHSM {
    /// Debian's `softhsm2` module.
    public static let modulePath = "/usr/lib/softhsm/libsofthsm2.so"

    private static let lock = NSLock()
    nonisolated(unsafe) private static var folder: URL?  // guarded by `lock`
    nonisolated(unsafe) private static var stock: [SoftHSMToken] = []  // guarded by `lock`
    /// Tokens initialised per test process.
    public static let stockSize = 20

    /// The process's SoftHSM folder, created and exported as `SOFTHSM2_CONF` on first use.
    public static func directory() throws -> URL {
        lock.lock()
        defer { lock.unlock() }
        if let folder { return folder }
        let root = try TestScratch.directory("issuerd-softhsm")  // removed with the process's scratch folder
        let tokens = root.appendingPathComponent("tokens")
        try FileManager.default.createDirectory(at: tokens, withIntermediateDirectories: true)
        let configuration = root.appendingPathComponent("softhsm2.conf")
        try
            "directories.tokendir = \(tokens.path)\nobjectstore.backend = file\nlog.level = ERROR\nslots.removable = false\n"
            .write(to: configuration, atomically: true, encoding: .utf8)
        setenv("SOFTHSM2_CONF", configuration.path, 1)
        stock = try (0..<stockSize).map { _ in try initialise(in: root) }
        folder = root
        return root
    }

    /// A fresh token of the stock, with a random user PIN written to a 0600 file.
    ///
    /// - Throws: ``SoftHSMSetupError`` when `softhsm2-util` is missing or fails.
    public static func makeToken() throws -> SoftHSMToken {
        _ = try directory()
        lock.lock()
        defer { lock.unlock() }
        guard let token = stock.popLast() else {
            throw SoftHSMSetupError("all \(stockSize) SoftHSM test tokens are in use: raise SoftHSM.stockSize")
        }
        return token
    }

    private static func initialise(in root: URL) throws -> SoftHSMToken {
        guard FileManager.default.fileExists(atPath: modulePath) else {
            throw SoftHSMSetupError(
                "\(modulePath) is missing: install the Debian package softhsm2 (scripts/lib/common.sh does)")
        }
        let utility = ["/usr/bin/softhsm2-util", "/usr/local/bin/softhsm2-util"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
        guard let utility else {
            throw SoftHSMSetupError("softhsm2-util is missing: install the Debian package softhsm2")
        }
        let label = "issuerd-test-\(UUID().uuidString.prefix(8).lowercased())"
        let pin = "pin-" + UUID().uuidString.prefix(12).lowercased()
        let soPIN = "so-" + UUID().uuidString.prefix(12).lowercased()
        // Test tooling only: the product never takes a PIN as an argument.
        guard
            ChildProcess.run(utility, ["--init-token", "--free", "--label", label, "--so-pin", soPIN, "--pin", pin])
                == 0
        else {
            throw SoftHSMSetupError("softhsm2-util --init-token failed for \(label)")
        }
        let pinFile = root.appendingPathComponent("\(label).pin")
        _ = FileManager.default.createFile(
            atPath: pinFile.path, contents: Data((pin + "\n").utf8), attributes: [.posixPermissions: 0o600])
        return SoftHSMToken(label: label, pin: pin, pinFile: pinFile.path, directory: root)
    }
}

/// One initialised SoftHSM2 token.
public struct SoftHSMToken: Sendable {
    /// The token label (`ISSUERD_PKCS11_TOKEN_LABEL`).
    public let label: String
    /// The user PIN (tests only).
    public let pin: String
    /// A 0600 file holding the PIN and a newline (`ISSUERD_PKCS11_PIN_FILE`).
    public let pinFile: String
    /// The process's SoftHSM folder.
    public let directory: URL

    /// A file holding a wrong PIN, for the refusal tests.
    public func wrongPINFile() throws -> String {
        let path = directory.appendingPathComponent("\(label).wrong.pin").path
        _ = FileManager.default.createFile(
            atPath: path, contents: Data("wrong-\(pin)\n".utf8), attributes: [.posixPermissions: 0o600])
        return path
    }
}

/// A SoftHSM prerequisite missing: the test fails with the reason (never skips).
public struct SoftHSMSetupError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
