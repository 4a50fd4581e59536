import Foundation
import IssuerdPostgres
import Testing

/// Rows read in binary format decode to exactly what the same rows read as text decode to, for
/// every type that reads a binary form; any other type is refused, never misread.
@Suite struct BinaryResultTests {
    static let values = """
        SELECT v.*
        FROM (VALUES
            ('0f4e1c2a-9b3d-4e5f-8a7b-6c5d4e3f2a1b'::uuid, '2026-12-02 07:51:13.123456+00'::timestamptz, 0::int2, 0::int4, 0::int8, true,
             'plain'::text, '{"a":[1,2],"é":"ü"}'::json, '{"b":1}'::jsonb, 'x'::varchar, 'bp'::bpchar),
            ('ffffffff-ffff-ffff-ffff-ffffffffffff', '1999-12-31 23:59:59.999999+00', -32768, -2147483648, -9223372036854775808, false,
             '한국어 😀 "q" \\ \n', '[]', '[]', '', ' '),
            ('00000000-0000-0000-0000-000000000000', '2000-01-01 00:00:00+00', 32767, 2147483647, 9223372036854775807, true,
             '', 'null', 'null', 'y', 'z'),
            ('12345678-90ab-cdef-1234-567890abcdef', 'infinity', 1, 1, 1, false, 't', '1', '1', 'v', 'w'),
            ('abcdef01-2345-6789-abcd-ef0123456789', '-infinity', -1, -1, -1, true, 'u', '"s"', '"s"', 'v', 'w'),
            ('abcdef01-2345-6789-abcd-ef0123456789', '0044-03-15 12:00:00+00', 7, 7, 7, true, 'u', '{}', '{}', 'v', 'w'),
            (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)
        ) AS v (id, at, small, medium, large, flag, words, document, binary_document, short, padded)
        """

    @Test func binaryRowsDecodeAsTextRowsDo() throws {
        try withTestPool(size: 1) { pool in
            try pool.withConnection { connection in
                let text = try connection.query(PostgresQuery(unsafeSQL: Self.values))
                let binary = try connection.queryBinary(PostgresQuery(unsafeSQL: Self.values))
                #expect(!text.isEmpty && text.count == binary.count)
                #expect(binary.allSatisfy(\.isBinary) && !text.contains(where: \.isBinary))
                for (t, b) in zip(text, binary) {
                    #expect(try t.decode(0, as: String?.self) == b.decode(0, as: String?.self))
                    #expect(try t.decode(0, as: UUID?.self) == b.decode(0, as: UUID?.self))
                    let textTime = try t.decode(1, as: Date?.self)
                    let binaryTime = try b.decode(1, as: Date?.self)
                    #expect(textTime == binaryTime, "\(String(describing: textTime)) \(String(describing: binaryTime))")
                    #expect(
                        textTime.map { $0.timeIntervalSinceReferenceDate.bitPattern }
                            == binaryTime.map { $0.timeIntervalSinceReferenceDate.bitPattern })
                    for column in 2...4 {
                        #expect(try t.decode(column, as: Int64?.self) == b.decode(column, as: Int64?.self), "\(column)")
                        #expect(try t.decode(column, as: Int?.self) == b.decode(column, as: Int?.self), "\(column)")
                    }
                    #expect(try t.decode(2, as: Int16?.self) == b.decode(2, as: Int16?.self))
                    #expect(try t.decode(3, as: Int32?.self) == b.decode(3, as: Int32?.self))
                    #expect(try t.decode(5, as: Bool?.self) == b.decode(5, as: Bool?.self))
                    for column in [6, 7, 9, 10] {
                        #expect(
                            try t.decode(column, as: String?.self) == b.decode(column, as: String?.self), "\(column)")
                        #expect(
                            try t.withBytes(column) { $0.map(Array.init) }
                                == b.withBytes(column) { $0.map(Array.init) }, "\(column): the same bytes")
                    }
                    #expect(try t.decode(8, as: String?.self) == b.decode(8, as: String?.self))
                }
                // Out of range for the Swift type, in either format.
                let wide = try connection.queryBinary("SELECT 2147483648::int8 AS n")[0]
                #expect(throws: PostgresError.self) { try wide.decode(0, as: Int32.self) }
                // A type with no binary reading (numeric, float8, bytea, arrays) is refused, not misread.
                let others = try connection.queryBinary(
                    "SELECT 1.5::numeric AS a, 2.5::float8 AS b, '\\x00'::bytea AS c, ARRAY['a']::text[] AS d")[0]
                #expect(throws: PostgresError.self) { try others.decode(0, as: Double.self) }
                #expect(throws: PostgresError.self) { try others.decode(1, as: Double.self) }
                #expect(throws: PostgresError.self) { try others.decode(2, as: String.self) }
                #expect(throws: PostgresError.self) { try others.decode(3, as: [String].self) }
                #expect(throws: PostgresError.self) { try others.decode(1, as: String.self) }
            }
        }
    }

    @Test func binaryCursorPagesMatchTextPages() throws {
        try withTestPool(size: 1) { pool in
            try pool.withConnection { connection in
                try connection.transaction { connection in
                    try connection.execute(
                        "DECLARE c NO SCROLL CURSOR FOR SELECT gen_random_uuid() AS id, now() - n * interval '1 second' AS at FROM generate_series(1, 2500) n"
                    )
                    var rows = 0
                    while true {
                        let page = try connection.queryBinary("FETCH FORWARD 1000 FROM c")
                        for row in page {
                            let id: String = try row.decode(0)
                            #expect(UUID(uuidString: id)?.uuidString.lowercased() == id)
                            _ = try row.decode(1, as: Date.self)
                        }
                        rows += page.count
                        if page.count < 1000 { break }
                    }
                    #expect(rows == 2500)
                }
            }
        }
    }
}
