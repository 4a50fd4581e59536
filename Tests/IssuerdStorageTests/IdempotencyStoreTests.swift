import Foundation
import IssuerdCore
import IssuerdPostgres
import IssuerdStorage
import IssuerdTestSupport
import Testing

/// The store keeps an answer as values (status, headers, body) and gives the same values back.
@Suite("Idempotency keys: answers stored as values")
struct IdempotencyStoreTests {
    @Test("A stored answer's status, headers and body come back whole on replay; the work runs once")
    func headersAreReplayed() throws {
        let app = try MigratedDatabase()
        let store = IdempotencyStore(database: app.pool)
        let answer = StoredAnswer(
            status: 202, headers: ["Location": "/v1/admin/things/7", "X-Thing": "a, b"], body: Array(#"{"id":7}"#.utf8))
        var runs = 0
        func call() throws -> StoredAnswer {
            let work: (IdempotencyClaim?) throws -> StoredAnswer = { _ in
                runs += 1
                return answer
            }
            return try store.run(
                key: "k-1", request: { Array("POST /things".utf8) }, scope: "test", stored: { $0 },
                refused: { _ in nil }, replayed: { $0 }, work)
        }
        #expect(try call() == answer)
        #expect(try call() == answer)
        #expect(runs == 1)
        let stored = try app.pool.withConnection {
            try $0.query("SELECT response_headers FROM idempotency_keys WHERE key = 'k-1'")[0].decode(
                "response_headers", as: [String].self)
        }
        #expect(stored == ["Location", "/v1/admin/things/7", "X-Thing", "a, b"])
    }
}
