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

    @Test(arguments: [
        ("{a\\,b,c}", ["a,b", "c"]),
        ("{null,Null,nULL,NULLS,NUL}", [nil, nil, nil, "NULLS", "NUL"]),
        // An escaped letter makes it data, as PostgreSQL's array_in reads it.
        ("{N\\ULL,\"N\\ULL\"}", ["NULL", "NULL"]),
        ("{\"\\\\\",\"a\\\"b\\\\\"}", ["\\", "a\"b\\"]),
        ("{\\a,b\\}", ["a", "b\\"]),
        ("{한글,\"é,ü\"}", ["한글", "é,ü"]),
    ])
    func parsesEscapesAndNulls(text: String, expected: [String?]) throws {
        #expect(try PostgresArrayLiteral.parse(text) == expected)
    }

    /// The parser in place over the bytes agrees with a plain reading of the grammar (the one
    /// issuerd used before) on random texts built from the characters that matter.
    @Test func agreesWithAPlainReadingOnRandomTexts() {
        let pieces = ["{", "}", ",", "\"", "\\", "a", "NULL", "null", "é", "한", " ", "[1:2]="]
        var generator = SystemRandomNumberGenerator()
        var accepted = 0
        for _ in 0..<20_000 {
            var text = Int.random(in: 0..<4, using: &generator) == 0 ? "" : "{"
            for _ in 0..<Int.random(in: 0..<8, using: &generator) {
                text += pieces[Int.random(in: 0..<pieces.count, using: &generator)]
            }
            if Int.random(in: 0..<4, using: &generator) != 0 { text += "}" }
            let parsed = try? PostgresArrayLiteral.parse(text)
            let reference = try? Self.plainParse(text)
            #expect(parsed == reference, "\(text)")
            if parsed != nil { accepted += 1 }
        }
        #expect(accepted > 1_000)
    }

    /// The grammar read element by element through `[UInt8]` and `String`.
    private static func plainParse(_ text: String) throws -> [String?] {
        struct Malformed: Error {}
        var bytes = Array(text.utf8)[...]
        if bytes.first == UInt8(ascii: "[") {
            guard let equals = bytes.firstIndex(of: UInt8(ascii: "=")) else { throw Malformed() }
            bytes = bytes[(equals + 1)...]
        }
        guard bytes.count >= 2, bytes.first == UInt8(ascii: "{"), bytes.last == UInt8(ascii: "}") else {
            throw Malformed()
        }
        let body = Array(bytes.dropFirst().dropLast())
        if body.isEmpty { return [] }
        var elements: [String?] = []
        var index = 0
        while true {
            if index < body.count, body[index] == UInt8(ascii: "{") { throw Malformed() }
            var element: [UInt8] = []
            var quoted = false
            var escaped = false
            if index < body.count, body[index] == UInt8(ascii: "\"") {
                quoted = true
                index += 1
                while true {
                    guard index < body.count else { throw Malformed() }
                    let byte = body[index]
                    index += 1
                    if byte == UInt8(ascii: "\"") { break }
                    if byte == UInt8(ascii: "\\") {
                        guard index < body.count else { throw Malformed() }
                        element.append(body[index])
                        index += 1
                    } else {
                        element.append(byte)
                    }
                }
            } else {
                while index < body.count, body[index] != UInt8(ascii: ",") {
                    if body[index] == UInt8(ascii: "\\"), index + 1 < body.count {
                        index += 1
                        escaped = true
                    }
                    element.append(body[index])
                    index += 1
                }
            }
            let string = String(decoding: element, as: UTF8.self)
            elements.append(!quoted && !escaped && string.uppercased() == "NULL" ? nil : string)
            if index == body.count { return elements }
            guard body[index] == UInt8(ascii: ",") else { throw Malformed() }
            index += 1
        }
    }

    @Test(arguments: ["", "a,b", "{{a},{b}}", "{\"open}", "{a\"b}x", "{", "}", "[1:2]{a}"])
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

extension PostgresArrayLiteralTests {
    /// Plain counts are read as numbers; anything else is left to the general parser.
    @Test(
        arguments: [
            ("{}", [Int]()), ("{0}", [0]), ("{3,0,12}", [3, 0, 12]),
            ("{999999999999999999}", [999_999_999_999_999_999]),
            ("", nil), ("{", nil), ("{,}", nil), ("{1,}", nil), ("{,1}", nil), ("{-1}", nil), ("{1 ,2}", nil),
            ("{\"1\"}", nil), ("{NULL}", nil), ("[1:1]={1}", nil), ("{1000000000000000000}", nil), ("{1,2}x", nil),
        ] as [(String, [Int]?)])
    func plainCounts(text: String, expected: [Int]?) {
        var text = text
        let counts = text.withUTF8 { PostgresArrayLiteral.plainCounts($0) }
        #expect(counts == expected)
        // Whatever it reads, the general parser reads as the same numbers.
        if let counts {
            #expect((try? PostgresArrayLiteral.parse(text))?.map { $0.flatMap { Int($0) } } == counts.map { $0 })
        }
    }
}
