import Foundation
import IssuerdCore
import IssuerdPostgres
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// PostgreSQL out of disk (SQLSTATE 53100), seen from a client of the API: the database of a
/// throwaway cluster lives on a small tmpfs (a tablespace), which the test fills and frees.
@Suite("A database out of disk over HTTP")
struct FullDiskDatabaseTests {
    @Test("A full disk is 503 with Retry-After, readyz unready until writes succeed, one log line per interval")
    func fullDisk() throws {
        let server = try DisposablePostgresServer()
        defer { server.destroy() }
        let mountPoint = server.directory.appendingPathComponent("small")
        try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
        let mounted = try ExternalProcess.run(
            "/bin/mount", ["-t", "tmpfs", "-o", "size=40m", "tmpfs", mountPoint.path])
        guard mounted.status == 0 else {
            print("FullDiskDatabaseTests skipped: mounting a tmpfs is not allowed here: \(mounted.stderr)")
            return
        }
        defer { _ = try? ExternalProcess.run("/bin/umount", ["-l", mountPoint.path]) }
        let tablespace = mountPoint.appendingPathComponent("pg")
        try FileManager.default.createDirectory(at: tablespace, withIntermediateDirectories: true)
        _ = try ExternalProcess.run("/bin/chown", ["-R", "postgres:postgres", mountPoint.path])
        let admin = PostgresPool(
            configuration: PostgresPoolConfiguration(connectionString: server.connectionString, size: 1),
            logger: .silent)
        try admin.withConnection { connection in
            try connection.execute(unsafeSQL: "CREATE TABLESPACE small LOCATION '\(tablespace.path)'")
            try connection.execute(unsafeSQL: "CREATE DATABASE issuerd TABLESPACE small")
        }
        admin.close()

        let lines = LineCollector()
        // With MDES's issuer side, whose own database failures are kept to a line per interval too.
        let mdes = try MDESFixture(
            environment: [
                "ISSUERD_DATABASE_URL": server.connectionString.replacingOccurrences(
                    of: "dbname=postgres", with: "dbname=issuerd"),
                "ISSUERD_LOG_LEVEL": "warning", "ISSUERD_LOG_REPEAT_INTERVAL": "2s",
            ],
            logger: Logger(label: "test", minimumLevel: .warning, handler: lines), seeded: false)
        let app = mdes.app
        #expect(try app.client.get("/readyz").status == 200)

        // Fill what is left of the tmpfs.
        let filler = mountPoint.appendingPathComponent("filler")
        _ = FileManager.default.createFile(atPath: filler.path, contents: nil)
        let handle = try FileHandle(forWritingTo: filler)
        let block = Data(count: 1 << 16)
        while (try? handle.write(contentsOf: block)) != nil {}
        try? handle.close()

        // An unknown card's authorization still records its attempt: a write into new space.
        let refused = try (0..<5).map { _ in
            try app.postAsTSP("/v1/tsp/tokenization/authorize", DecisionFixtures.authorizeBody())
        }
        for answer in refused {
            #expect(answer.status == 503, "\(answer.text)")
            #expect(answer.header("Retry-After") == "1")
            #expect(answer.errorEnvelope()?["code"] as? String == "database_unavailable")
        }
        let ready = try app.client.get("/readyz")
        #expect(ready.status == 503, "\(ready.text)")
        #expect(ready.text.contains("insufficientResources"))
        #expect(lines.count(of: "database unavailable") == 1, "\(lines.lines)")
        for index in 0..<3 {
            let answer = try mdes.post("authorizeService", try mdes.authorizeBody(requestId: "full-\(index)"))
            #expect(answer.status == 503, "\(answer.text)")
        }
        #expect(lines.count(of: "MDES request not processed") == 1, "\(lines.lines)")

        // After the interval, the next one is logged with how many were left out.
        Thread.sleep(forTimeInterval: 2.2)
        #expect(try app.postAsTSP("/v1/tsp/tokenization/authorize", DecisionFixtures.authorizeBody()).status == 503)
        let logged = lines.lines.filter { $0.contains("database unavailable") }
        #expect(logged.count == 2, "\(logged)")
        #expect(logged.last?.contains("\"repeated\":4") == true, "\(logged)")

        // Space again: ready by itself, and served.
        try FileManager.default.removeItem(at: filler)
        var status = 0
        for _ in 0..<50 where status != 200 {
            status = try app.client.get("/readyz").status
            if status != 200 { Thread.sleep(forTimeInterval: 0.1) }
        }
        #expect(status == 200, "readyz did not come back once the disk had space")
        let served = try app.postAsTSP("/v1/tsp/tokenization/authorize", DecisionFixtures.authorizeBody())
        #expect(served.status == 200, "\(served.text)")
    }

}
