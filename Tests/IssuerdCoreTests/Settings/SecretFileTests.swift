import Foundation
import IssuerdCore
import Testing

/// Secrets given as files (`NAME_FILE`), and `ISSUERD_*` variables that no setting reads.
@Suite("Secret files and unknown settings")
struct SecretFileTests {
    /// A file holding `text` with permissions `mode`, removed when the test's directory goes.
    static func secretFile(_ text: String, mode: Int, in directory: URL) throws -> String {
        let path = directory.appendingPathComponent("secret-\(UUID().uuidString)").path
        guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8)) else {
            throw CocoaError(.fileWriteUnknown)
        }
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
        return path
    }

    static func scratch() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("issuerd-secrets-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    @Test("A secret's _FILE form is read, without its trailing line break")
    func readsFile() throws {
        let directory = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = try Self.secretFile("tsp-secret-0123456789abcdef\n", mode: 0o600, in: directory)
        let reader = try ConfigurationReader.layered(file: nil, environment: ["ISSUERD_TSP_HMAC_SECRET_FILE": path])
        #expect(reader.string("ISSUERD_TSP_HMAC_SECRET") == "tsp-secret-0123456789abcdef")
        let owner = try Self.secretFile("x", mode: 0o400, in: directory)
        #expect(
            try ConfigurationReader.layered(file: nil, environment: ["ISSUERD_DATABASE_PASSWORD_FILE": owner]).string(
                "ISSUERD_DATABASE_PASSWORD") == "x")
    }

    @Test("A 0644 secret file is refused with one line naming it", arguments: [0o644, 0o640, 0o604])
    func sharedFileRefused(mode: Int) throws {
        let directory = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = try Self.secretFile("c2VjcmV0", mode: mode, in: directory)
        let error = #expect(throws: ConfigurationError.self) {
            try ConfigurationReader.layered(file: nil, environment: ["ISSUERD_MASTER_KEY_FILE": path])
        }
        #expect(error?.key == "ISSUERD_MASTER_KEY_FILE")
        #expect(error?.description.contains(path) == true)
        #expect(error?.description.contains("readable by its group or others") == true)
        #expect(error?.description.contains("\n") == false)
        #expect(error?.description.contains("c2VjcmV0") == false)
    }

    @Test("A secret set both directly and as a file is an error; a missing or empty file is named")
    func bothFormsOrMissing() throws {
        let directory = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = try Self.secretFile("abc", mode: 0o600, in: directory)
        let both = #expect(throws: ConfigurationError.self) {
            try ConfigurationReader.layered(
                file: nil, environment: ["ISSUERD_APP_JWT_SECRET": "abc", "ISSUERD_APP_JWT_SECRET_FILE": path])
        }
        #expect(both?.key == "ISSUERD_APP_JWT_SECRET")
        let missing = #expect(throws: ConfigurationError.self) {
            try ConfigurationReader.layered(
                file: nil, environment: ["ISSUERD_NOTIFY_WEBHOOK_SECRET_FILE": directory.path + "/absent"])
        }
        #expect(missing?.description == "ISSUERD_NOTIFY_WEBHOOK_SECRET_FILE: cannot read \(directory.path)/absent")
        let empty = try Self.secretFile("\n", mode: 0o600, in: directory)
        #expect(throws: ConfigurationError.self) {
            try ConfigurationReader.layered(file: nil, environment: ["ISSUERD_APP_JWT_SECRET_FILE": empty])
        }
    }

    @Test("An unknown setting is named with the closest known one; settings, _FILE forms and the scripts' own are not")
    func unknownSettingNamed() {
        let reader = ConfigurationReader([
            "ISSUERD_DB_POOLSIZE": "4", "ISSUERD_DB_POOL_SIZE": "4", "ISSUERD_MASTER_KEY_FILE": "/x",
            "ISSUERD_TEST_DATABASE_URL": "x", "ISSUERD_LSITEN": "x", "PATH": "/bin",
        ])
        let unknown = reader.unknownSettings
        #expect(unknown.map(\.name) == ["ISSUERD_DB_POOLSIZE", "ISSUERD_LSITEN"])
        #expect(unknown.map(\.closest) == ["ISSUERD_DB_POOL_SIZE", "ISSUERD_LISTEN"])
    }

    @Test("Every ISSUERD_ name the sources read is a known setting")
    func catalogueCoversTheSources() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Sources")
        let files = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        let pattern = try NSRegularExpression(pattern: "\"(ISSUERD_[A-Z0-9_]*[A-Z0-9])\"")
        var names: Set<String> = []
        for case let file as URL in files where file.pathExtension == "swift" {
            let text = try String(contentsOf: file, encoding: .utf8)
            for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                names.insert((text as NSString).substring(with: match.range(at: 1)))
            }
        }
        #expect(names.count > 50)
        #expect(names.filter { !KnownSettings.isKnown($0) }.sorted() == [])
    }
}
