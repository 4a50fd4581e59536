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
        // A quote or backslash followed by a combining mark is escaped too.
        let values = ["", "a\\b", "q\"", "NULL", "{}", "q\"\u{301}x", "\\\u{301}", "한글 \"따옴표\""]
        let text = PostgresArrayLiteral.format(values)
        #expect(try PostgresArrayLiteral.parse(text) == values.map { Optional($0) })
    }
}
