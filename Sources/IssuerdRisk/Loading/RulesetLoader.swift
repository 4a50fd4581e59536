import Foundation

/// Reads a ruleset directory (`*.rules`, `*.list`, `*.cases`, recursively) and compiles it.
///
/// The only type in the module that touches the file system; the compiler and the engine
/// work on the files it returns.
public struct RulesetLoader: Sendable {
    /// The ruleset directory.
    public let directory: URL
    /// Computes the version (SHA-256 in production).
    public let contentHasher: ContentHasher

    /// The extensions that belong to a ruleset; everything else (README.md, …) is ignored.
    public static let extensions: Set<String> = ["rules", "list", "cases"]
    /// The most files a ruleset may have; bounds what a wrong path can make us read.
    public static let maximumFiles = 2_000
    /// The largest file read.
    public static let maximumFileBytes = 64 << 20

    /// A loader for `directory`.
    public init(directory: URL, contentHasher: @escaping ContentHasher) {
        self.directory = directory
        self.contentHasher = contentHasher
    }

    /// A loader for the directory at `path`.
    public init(path: String, contentHasher: @escaping ContentHasher) {
        self.init(directory: URL(fileURLWithPath: path, isDirectory: true), contentHasher: contentHasher)
    }

    /// Reads and compiles the directory.
    ///
    /// - Throws: ``RulesetError`` (`rules.unreadable` or `rules.invalid`).
    public func load() throws(RulesetError) -> Ruleset {
        try RulesetCompiler.compile(files(), contentHasher: contentHasher)
    }

    /// Every ruleset file, with paths relative to the directory, sorted.
    ///
    /// - Throws: ``RulesetError`` with code `rules.unreadable`.
    public func files() throws(RulesetError) -> [RulesetFile] {
        let root = directory.standardizedFileURL
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: root.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw RulesetError(code: .unreadable, diagnostics: [], detail: "\(root.path): not a directory")
        }
        guard
            let enumerator = FileManager.default.enumerator(
                at: root, includingPropertiesForKeys: [.isRegularFileKey, .fileSizeKey],
                options: [.skipsHiddenFiles])
        else {
            throw RulesetError(code: .unreadable, diagnostics: [], detail: "\(root.path): cannot list the directory")
        }
        var files: [RulesetFile] = []
        let prefix = root.path.hasSuffix("/") ? root.path : root.path + "/"
        for case let url as URL in enumerator where Self.extensions.contains(url.pathExtension) {
            let values = try? url.resourceValues(forKeys: [.isRegularFileKey, .fileSizeKey])
            guard values?.isRegularFile == true else { continue }
            let path = url.standardizedFileURL.path
            let relative = path.hasPrefix(prefix) ? String(path.dropFirst(prefix.count)) : url.lastPathComponent
            guard files.count < Self.maximumFiles else {
                throw RulesetError(
                    code: .unreadable, diagnostics: [],
                    detail: "\(root.path): more than \(Self.maximumFiles) ruleset files")
            }
            guard (values?.fileSize ?? 0) <= Self.maximumFileBytes else {
                throw RulesetError(
                    code: .unreadable, diagnostics: [],
                    detail: "\(relative): larger than \(Self.maximumFileBytes >> 20) MiB")
            }
            guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8)
            else {
                throw RulesetError(code: .unreadable, diagnostics: [], detail: "\(relative): unreadable or not UTF-8")
            }
            files.append(RulesetFile(path: relative, contents: text))
        }
        return files.sorted { $0.path < $1.path }
    }
}
