import Foundation
import IssuerdCore
import IssuerdTestSupport
import Testing

@testable import IssuerdAPI

/// A card number sent where an id belongs: never written to the log, never stored as an id.
@Suite("Card numbers in paths and ids")
struct CardNumberInPathTests {
    @Test("A card number in a path is masked in the request log, answered or refused")
    func pathsAreMaskedInTheLog() throws {
        let lines = LineCollector()
        // Over the wire: the request log is the HTTP server's to write.
        let app = try TestApplication(
            environment: ["ISSUERD_LOG_LEVEL": "info"],
            logger: Logger(label: "test", minimumLevel: .info, handler: lines), transport: .live)
        let admin = try app.apiKey(role: .admin)
        let pan = AdminFixtures.pan(serial: 7)
        let spaced = "4111%2011%2011%20110000"
        #expect(try app.client.get("/v1/admin/cards/\(pan)/tokens", headers: AdminFixtures.bearer(admin)).status == 404)
        #expect(try app.client.get("/v1/admin/cards/\(pan)/tokens").status == 401)
        _ = try app.client.get("/v1/cards/\(spaced)x")
        let requests = lines.lines.filter { $0.contains("\"request\"") || $0.contains("request") }
        #expect(requests.count >= 3, "\(lines.lines)")
        for line in lines.lines {
            #expect(!line.contains(pan), "\(line)")
            #expect(!line.contains("4111 11 11 110000"), "\(line)")
        }
        #expect(lines.lines.contains { $0.contains("/v1/admin/cards/****/tokens") }, "\(lines.lines)")
        #expect(lines.lines.contains { $0.contains("/v1/cards/****x") }, "\(lines.lines)")
    }

    @Test("A customer id holding a card number is 400 and nothing is stored; a long numeric id is not one")
    func customerIdsHoldNoCardNumber() throws {
        let app = try TestApplication()
        let headers = AdminFixtures.bearer(try app.apiKey(role: .admin))
        let pan = AdminFixtures.pan(serial: 8)
        for id in [pan, "cust-\(pan)", "c." + pan.prefix(8) + "." + pan.dropFirst(8)] {
            let refused = try app.client.postJSON(
                "/v1/admin/customers", #"{"customerId":"\#(id)"}"#, headers: headers)
            #expect(refused.status == 400, "\(id): \(refused.text)")
            #expect(refused.errorEnvelope()?["code"] as? String == "invalid_request")
            #expect(!refused.text.contains(pan))
        }
        #expect(try DecisionFixtures.count(app, "SELECT count(*) FROM customers") == 0)
        #expect(
            try DecisionFixtures.count(
                app, "SELECT count(*) FROM audit_log WHERE audit_log::text LIKE '%\(pan.suffix(8))%'")
                == 0)
        // Twenty digits are no card number; nor are eleven.
        for id in ["cust-" + String(repeating: "1", count: 20), "cust-41111111111"] {
            let created = try app.client.postJSON("/v1/admin/customers", #"{"customerId":"\#(id)"}"#, headers: headers)
            #expect(created.status == 201, "\(id): \(created.text)")
        }
    }

}
