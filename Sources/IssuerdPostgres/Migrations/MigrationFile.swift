import Foundation

/// One `NNNN_name.sql` file in the migrations directory.
public struct MigrationFile: Sendable, Hashable {
    /// The number before the first underscore, e.g. 12 for `0012_cards.sql`.
    public let version: Int
    /// The part between the underscore and `.sql`, e.g. `cards`.
    public let name: String
    /// The file name, e.g. `0012_cards.sql`.
    public let fileName: String
    /// The file's exact bytes; the checksum covers these.
    public let contents: [UInt8]

    /// Parses a file name, or returns nil when it is not a `.sql` file at all.
    ///
    /// - Throws: ``PostgresError/Code/migration`` for a `.sql` file whose name does not follow
    ///   `NNNN_name.sql` (at least four digits; letters, digits, `_` and `-` in the name), so a
    ///   misnamed migration is reported instead of silently skipped.
    static func parseName(_ fileName: String) throws -> (version: Int, name: String)? {
        guard fileName.hasSuffix(".sql"), !fileName.hasPrefix(".") else { return nil }
        let stem = fileName.dropLast(4)
        let invalid = PostgresError(code: .migration, message: "migration file \(fileName) is not named NNNN_name.sql")
        guard let underscore = stem.firstIndex(of: "_") else { throw invalid }
        let digits = stem[..<underscore]
        let name = stem[stem.index(after: underscore)...]
        guard (4...9).contains(digits.count), digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber),
            let version = Int(digits), !name.isEmpty,
            name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") })
        else { throw invalid }
        return (version, String(name))
    }

    /// Reads every migration in `directory`, sorted by version.
    ///
    /// - Throws: ``PostgresError/Code/migration`` when the directory cannot be read, a name is
    ///   malformed, two files share a version, or a file is not UTF-8 text.
    static func load(from directory: URL) throws -> [MigrationFile] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        } catch {
            throw PostgresError(code: .migration, message: "cannot read migrations directory \(directory.path)")
        }
        var files: [MigrationFile] = []
        for fileName in names {
            guard let (version, name) = try parseName(fileName) else { continue }
            let url = directory.appendingPathComponent(fileName)
            guard let data = FileManager.default.contents(atPath: url.path) else {
                throw PostgresError(code: .migration, message: "cannot read migration file \(fileName)")
            }
            guard String(validating: data, as: UTF8.self) != nil else {
                throw PostgresError(code: .migration, message: "migration file \(fileName) is not UTF-8 text")
            }
            if let clash = files.first(where: { $0.version == version }) {
                throw PostgresError(
                    code: .migration,
                    message: "migration files \(clash.fileName) and \(fileName) share version \(version)")
            }
            files.append(MigrationFile(version: version, name: name, fileName: fileName, contents: [UInt8](data)))
        }
        return files.sorted { $0.version < $1.version }
    }

    /// The SQL text (validated as UTF-8 when loaded).
    var sql: String { String(decoding: contents, as: UTF8.self) }
}
