import Testing

@testable import IssuerdPostgres

@Suite struct PostgresArrayLiteralTests {
    @Test(arguments: [
        ("{}", [String?]()),
        ("{a,b}", ["a", "b"]),
        ("{\"a,b\",\"c\\\"d\",NULL,\"NULL\"}", ["a,b", "c\"d", nil, "NULL"]),
        ("[2:3]={x,y}", ["x", "y"]),
        ("{\"\"}", [""]),
    ])
    func parses(text: String, expected: [String?]) throws {
        #expect(try PostgresArrayLiteral.parse(text) == expected)
    }

    @Test(arguments: ["", "a,b", "{{a},{b}}", "{\"open}", "{a\"b}x"])
    func rejects(text: String) {
        #expect(throws: PostgresDecodingFailure.self) { try PostgresArrayLiteral.parse(text) }
    }

    @Test func formatQuotesEverything() throws {
        let values = ["", "a\\b", "q\"", "NULL", "{}"]
        let text = PostgresArrayLiteral.format(values)
        #expect(try PostgresArrayLiteral.parse(text) == values.map { Optional($0) })
    }
}
