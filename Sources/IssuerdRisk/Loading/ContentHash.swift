/// Turns the bytes of a ruleset into its version string.
///
/// The production wiring passes IssuerdCrypto's SHA-256 (hex); the risk module does not
/// depend on a digest implementation so it stays free of C libraries.
public typealias ContentHasher = @Sendable ([UInt8]) -> String

/// The canonical bytes a ruleset version is computed over, and a stand-in hasher.
public enum RulesetContent {
    /// Every file, sorted by path: `path NUL length NUL contents` each, so no two different
    /// directories produce the same bytes.
    public static func canonicalBytes(of files: [RulesetFile]) -> [UInt8] {
        var bytes: [UInt8] = []
        for file in files.sorted(by: { $0.path < $1.path }) {
            bytes += Array(file.path.utf8)
            bytes.append(0)
            let contents = Array(file.contents.utf8)
            bytes += Array(String(contents.count).utf8)
            bytes.append(0)
            bytes += contents
        }
        return bytes
    }

    /// FNV-1a 64-bit, prefixed `fnv1a64:`: a stand-in until the binary wires SHA-256.
    ///
    /// Not collision resistant; fine for tests and the CLI's local checks, never for audit.
    public static let fnv1a64: ContentHasher = { bytes in
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return "fnv1a64:" + String(repeating: "0", count: 16 - hex.count) + hex
    }
}

/// One file of a ruleset: its path relative to the ruleset directory, and its text.
public struct RulesetFile: Sendable, Hashable {
    /// Relative path with `/` separators, e.g. `lists/blocked_devices.list`.
    public var path: String
    /// UTF-8 text.
    public var contents: String

    /// A file.
    public init(path: String, contents: String) {
        self.path = path
        self.contents = contents
    }

    /// The file name without directory and extension.
    var baseName: String {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        guard let dot = name.lastIndex(of: ".") else { return name }
        return String(name[..<dot])
    }
}
