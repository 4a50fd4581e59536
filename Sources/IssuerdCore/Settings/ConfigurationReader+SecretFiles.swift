import Foundation

extension ConfigurationReader {
    /// The reader with each secret's `_FILE` form (``KnownSettings/secrets``) read into the
    /// secret's own key, so that secrets need not sit in the process environment (which
    /// `/proc/PID/environ` shows to the same user).
    ///
    /// - Throws: ``ConfigurationError`` when a secret is set both ways, or its file is missing,
    ///   empty, or readable by its group or others.
    public func resolvingSecretFiles() throws -> ConfigurationReader {
        var resolved = values
        for secret in KnownSettings.secrets.sorted() {
            let fileKey = secret + "_FILE"
            guard let path = string(fileKey) else { continue }
            guard string(secret) == nil else {
                throw ConfigurationError(key: secret, problem: "is set and so is \(fileKey); keep only one of them")
            }
            resolved[secret] = try Self.readSecretFile(path, key: fileKey)
        }
        return ConfigurationReader(resolved)
    }

    /// The text of a secret file without its trailing line break (`echo SECRET > file`).
    ///
    /// - Throws: ``ConfigurationError`` naming `key` and the path (never the content) when the
    ///   file cannot be read, is empty, or is readable by its group or others.
    public static func readSecretFile(_ path: String, key: String) throws -> String {
        try refuseSharedFile(path, key: key)
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8)
        else {
            throw ConfigurationError(key: key, problem: "cannot read \(path)")
        }
        var secret = text
        while let last = secret.last, last.isNewline { secret.removeLast() }
        guard !secret.isEmpty else { throw ConfigurationError(key: key, problem: "\(path) is empty") }
        return secret
    }

    /// Refuses a file that its group or others may use at all (read, write or run): a secret
    /// must be its owner's alone, as OpenSSH holds private keys.
    ///
    /// - Throws: ``ConfigurationError`` naming `key`, the path and its mode.
    public static func refuseSharedFile(_ path: String, key: String) throws {
        var status = stat()
        guard stat(path, &status) == 0 else { throw ConfigurationError(key: key, problem: "cannot read \(path)") }
        let mode = status.st_mode & 0o777
        guard mode & 0o077 == 0 else {
            throw ConfigurationError(
                key: key,
                problem:
                    "\(path) is readable by its group or others (mode \(String(mode, radix: 8))); a secret file must be mode 600 or 400"
            )
        }
    }

    /// Every `ISSUERD_*` variable that no setting reads, with the known setting closest to it
    /// (`ISSUERD_DB_POOLSIZE` → `ISSUERD_DB_POOL_SIZE`), in name order.
    public var unknownSettings: [(name: String, closest: String)] {
        values.keys.filter { $0.hasPrefix("ISSUERD_") && !KnownSettings.isKnown($0) }.sorted().map {
            ($0, KnownSettings.closest(to: $0))
        }
    }
}
