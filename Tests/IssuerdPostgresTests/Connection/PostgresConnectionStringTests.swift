import IssuerdPostgres
import Testing

@Suite struct PostgresConnectionStringTests {
    @Test func uriAndConninfoParseAndMaskThePassword() throws {
        let uri = try PostgresConnectionString("postgresql://issuer:s3cr%27et@db.example:6543/issuerd?sslmode=require")
        #expect(uri["host"] == "db.example")
        #expect(uri["port"] == "6543")
        #expect(uri["password"] == "s3cr'et")
        #expect(!uri.description.contains("s3cr"))
        #expect(uri.description.contains("password='****'"))
        #expect(
            !"\(PostgresPoolConfiguration(connectionString: "postgresql://u:topsecret@h/db"))".contains("topsecret"))

        let moved = uri.setting("dbname", to: "other db")
        let reparsed = try PostgresConnectionString(moved.unsafeConnectionString)
        #expect(reparsed["dbname"] == "other db")
        #expect(reparsed["password"] == "s3cr'et")
    }

    @Test func malformedStringIsAnError() {
        #expect(throws: PostgresError.self) { try PostgresConnectionString("host='unterminated") }
        #expect(throws: PostgresError.self) { try PostgresConnectionString("nonsense_keyword=1") }
    }
}
