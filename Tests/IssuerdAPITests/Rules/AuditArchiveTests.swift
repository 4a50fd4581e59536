import Foundation
import IssuerdCore
import IssuerdCrypto
import IssuerdPostgres
import IssuerdStorage
import IssuerdTestSupport
import Testing

/// The audit log's entries past retention leave the table as archive segments written by
/// `issuerd history archive`, and `issuerd audit verify --archive` walks the chain across them.
@Suite("Audit archive: segments past retention, the chain verified across them, tampering found")
struct AuditArchiveTests {
    private static func append(_ count: Int, at time: Date, subject: String, pool: PostgresPool) throws {
        try pool.withConnection { connection in
            for index in 0..<count {
                try AuditLog.append(
                    actor: "test", action: "test.archived", subject: "\(subject)-\(index)",
                    details: ["n": String(index)], at: time, connection: connection)
            }
            try AuditLog.seal(connection: connection, wait: true)
        }
    }

    private static func count(_ sql: String, pool: PostgresPool) throws -> Int64 {
        try pool.withConnection { try $0.query(PostgresQuery(unsafeSQL: sql))[0].decode("n", as: Int64.self) }
    }

    @Test(
        "Two segments archived and deleted; the sealer continues the chain from the anchor; verify walks the archive and finds a changed or missing segment"
    )
    func archiveAndVerify() throws {
        let app = try TestApplication()
        let archive = app.directory.appendingPathComponent("archive-\(UUID().uuidString)")
        let owner = [
            "ISSUERD_DATABASE_URL": app.serviceConnectionString,
            "ISSUERD_MIGRATE_DATABASE_URL": app.database.connectionString,
            "ISSUERD_RULES_DIR": TestApplication.repositoryRoot.appendingPathComponent("rules").path,
        ]
        let cutoff = Date().addingTimeInterval(3_600)
        let before = ["--before", RFC3339.string(cutoff)]

        // Everything written so far is older than the cutoff: one segment takes the whole chain.
        try Self.append(3, at: Date().addingTimeInterval(-86_400), subject: "old", pool: app.pool)
        let sealed = try Self.count("SELECT max(seq) AS n FROM audit_log", pool: app.pool)
        let first = try CommandLineRunner.run(
            ["history", "archive", "--dir", archive.path] + before, environment: owner)
        #expect(first.status == 0, "\(first.standardError)")
        #expect(
            first.standardOutput.contains("audit entries 1-\(sealed): \(sealed) archived to"), "\(first.standardOutput)"
        )
        #expect(try Self.count("SELECT count(*) AS n FROM audit_log WHERE seq IS NOT NULL", pool: app.pool) == 0)

        // The sealer continues from the anchor, not from the chain's start.
        try Self.append(2, at: Date().addingTimeInterval(-60), subject: "recent", pool: app.pool)
        try Self.append(2, at: cutoff.addingTimeInterval(3_600), subject: "future", pool: app.pool)
        #expect(try Self.count("SELECT min(seq) AS n FROM audit_log", pool: app.pool) == sealed + 1)
        let tableOnly = try CommandLineRunner.run(["audit", "verify"], environment: owner)
        #expect(tableOnly.status == 0, "\(tableOnly.standardOutput)\(tableOnly.standardError)")
        #expect(
            tableOnly.standardOutput.contains("audit chain intact: 4 entries after entry \(sealed)"),
            "\(tableOnly.standardOutput)")

        // The second run takes the two older entries and stops before the first newer one.
        let second = try CommandLineRunner.run(
            ["history", "archive", "--dir", archive.path] + before, environment: owner)
        #expect(second.status == 0, "\(second.standardError)")
        #expect(
            second.standardOutput.contains("audit entries \(sealed + 1)-\(sealed + 2): 2 archived"),
            "\(second.standardOutput)")
        #expect(try Self.count("SELECT count(*) AS n FROM audit_log_archives", pool: app.pool) == 2)

        let whole = try CommandLineRunner.run(["audit", "verify", "--archive", archive.path], environment: owner)
        #expect(whole.status == 0, "\(whole.standardOutput)\(whole.standardError)")
        #expect(
            whole.standardOutput.contains("audit archive intact: \(sealed + 2) entries in 2 segments"),
            "\(whole.standardOutput)")
        #expect(whole.standardOutput.contains("audit chain intact: 2 entries after entry \(sealed + 2)"))

        // Every file is in SHA256SUMS, as sha256sum -c reads it.
        let names = try FileManager.default.contentsOfDirectory(atPath: archive.path)
        let segments = names.filter { $0.hasPrefix("audit-") && $0.hasSuffix(".jsonl.gz") }.sorted()
        #expect(segments.count == 2)
        let sums = try String(contentsOf: archive.appendingPathComponent("SHA256SUMS"), encoding: .utf8)
        for segment in segments {
            let bytes = try #require(FileManager.default.contents(atPath: archive.appendingPathComponent(segment).path))
            #expect(sums.contains("\(BinaryEncoding.hexString(SHA256.hash([UInt8](bytes))))  \(segment)\n"))
        }

        // An entry changed in the first segment, its manifest's digest updated to hide it: the
        // chain still finds it.
        let segment = archive.appendingPathComponent(segments[0])
        let manifest = archive.appendingPathComponent(
            segments[0].replacingOccurrences(of: ".jsonl.gz", with: ".manifest.json"))
        let original = try #require(FileManager.default.contents(atPath: segment.path))
        let originalManifest = try #require(FileManager.default.contents(atPath: manifest.path))
        let text = try Self.gunzip(segment)
        #expect(text.contains(#""subject":"old-1""#))
        try Self.gzip(text.replacingOccurrences(of: #""subject":"old-1""#, with: #""subject":"old-X""#), to: segment)
        let changed = try CommandLineRunner.run(["audit", "verify", "--archive", archive.path], environment: owner)
        #expect(changed.status == 1)
        #expect(
            changed.standardOutput.contains("SHA-256 is not the one its manifest records"), "\(changed.standardOutput)")
        let tampered = try #require(FileManager.default.contents(atPath: segment.path))
        let digest = BinaryEncoding.hexString(SHA256.hash([UInt8](tampered)))
        let forged = String(decoding: originalManifest, as: UTF8.self).replacingOccurrences(
            of: #""sha256":"[0-9a-f]{64}""#, with: #""sha256":"\#(digest)""#, options: .regularExpression)
        try Data(forged.utf8).write(to: manifest)
        let hidden = try CommandLineRunner.run(["audit", "verify", "--archive", archive.path], environment: owner)
        #expect(hidden.status == 1)
        #expect(hidden.standardOutput.contains("was altered"), "\(hidden.standardOutput)")
        try original.write(to: segment)
        try originalManifest.write(to: manifest)

        // The second segment gone: the archive ends before the table's chain starts.
        let moved = app.directory.appendingPathComponent("moved-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: moved, withIntermediateDirectories: true)
        for name in names where name.hasPrefix("audit-") && name.contains(String(segments[1].prefix(18))) {
            try FileManager.default.moveItem(
                at: archive.appendingPathComponent(name), to: moved.appendingPathComponent(name))
        }
        let missing = try CommandLineRunner.run(["audit", "verify", "--archive", archive.path], environment: owner)
        #expect(missing.status == 1)
        #expect(
            missing.standardOutput.contains(
                "the archive holds the chain through entry \(sealed), the table continues it after entry \(sealed + 2)"),
            "\(missing.standardOutput)")
    }

    private static func gunzip(_ file: URL) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["gzip", "-dc", file.path]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    private static func gzip(_ text: String, to file: URL) throws {
        let plain = file.deletingPathExtension()
        try Data(text.utf8).write(to: plain)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["gzip", "-n", "-f", plain.path]
        try process.run()
        process.waitUntilExit()
    }
}
