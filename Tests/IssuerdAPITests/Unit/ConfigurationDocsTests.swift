import Foundation
import IssuerdTestSupport
import Testing

/// docs/configuration.md and the settings the code reads, kept in step; and `migrate` reading
/// the migrations folder from the setting `serve` reads it from.
@Suite("Settings: documented and read")
struct ConfigurationDocsTests {
    private static let root = TestApplication.repositoryRoot

    /// Every `"ISSUERD_…"` string literal in the product's sources: test support left out, and
    /// `KnownSettings.swift`, which lists names (the scripts' ones too) rather than reading them.
    private static func settingsRead() throws -> Set<String> {
        let sources = root.appendingPathComponent("Sources")
        var names: Set<String> = []
        let files = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)
        while let file = files?.nextObject() as? URL {
            guard file.pathExtension == "swift", !file.path.contains("/IssuerdTestSupport/"),
                file.lastPathComponent != "KnownSettings.swift"
            else { continue }
            let text = try String(contentsOf: file, encoding: .utf8)
            for match in text.matches(of: /"(ISSUERD_[A-Z0-9_]+)"/) { names.insert(String(match.output.1)) }
        }
        return names
    }

    /// The keys of docs/configuration.md's tables (`| \`ISSUERD_…\` |` rows).
    private static func settingsDocumented() throws -> Set<String> {
        let text = try String(contentsOf: root.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
        return Set(text.matches(of: /(?m)^\| `(ISSUERD_[A-Z0-9_]+)`/).map { String($0.output.1) })
    }

    @Test("Every setting docs/configuration.md lists is read by the code, and every one the code reads is listed")
    func documentedSettingsAreRead() throws {
        let read = try Self.settingsRead()
        let documented = try Self.settingsDocumented()
        #expect(!documented.isEmpty && !read.isEmpty)
        #expect(documented.subtracting(read).sorted() == [], "documented but never read")
        #expect(read.subtracting(documented).sorted() == [], "read but not in docs/configuration.md")
    }

    @Test("issuerd migrate takes its folder from ISSUERD_SQL_DIR, as serve does; --sql-dir still wins")
    func migrateHonoursTheSQLDirSetting() throws {
        let database = try TestDatabase.create()
        defer { database.drop() }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("issuerd-sql-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data("CREATE TABLE settings_probe (id int);\n".utf8).write(
            to: folder.appendingPathComponent("0001_settings_probe.sql"))

        let environment = ["ISSUERD_DATABASE_URL": database.connectionString, "ISSUERD_SQL_DIR": folder.path]
        let status = try CommandLineRunner.run(["migrate", "--status"], environment: environment)
        #expect(status.status == 0, "\(status.standardError)")
        #expect(status.standardOutput.contains("0001_settings_probe.sql"))
        #expect(!status.standardOutput.contains("0001_core_schema"), "the repository's sql/ was read instead")

        let applied = try CommandLineRunner.run(["migrate"], environment: environment)
        #expect(applied.status == 0, "\(applied.standardError)")
        #expect(applied.standardOutput.contains("applied 0001_settings_probe.sql"))

        let explicit = try CommandLineRunner.run(
            ["migrate", "--status", "--sql-dir", Self.root.appendingPathComponent("sql").path], environment: environment
        )
        #expect(explicit.standardOutput.contains("0001_core_schema"))
    }
}
