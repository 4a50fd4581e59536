import Foundation
import IssuerdPostgres
import Testing

@Suite struct NullAndMismatchTests {
    @Test func optionalsSendAndReceiveNull() throws {
        try withTestPool { pool in
            try pool.withConnection { connection in
                #expect(try roundTrip([Int?.none, 5], as: "int8", on: connection) == [nil, 5])
                #expect(try roundTrip([String?.none, "x"], as: "text", on: connection) == [nil, "x"])
                #expect(try roundTrip([Date?.none], as: "timestamptz", on: connection) == [nil])
                #expect(try roundTrip([[UInt8]?.none, [0]], as: "bytea", on: connection) == [nil, [0]])
                #expect(try roundTrip([[String]?.none], as: "text[]", on: connection) == [nil])
                #expect(try roundTrip([PostgresJSON?.none], as: "jsonb", on: connection) == [nil])
                #expect(try roundTrip([UUID?.none], as: "uuid", on: connection) == [nil])
                #expect(try roundTrip([Bool?.none, true], as: "bool", on: connection) == [nil, true])
                let isNull = try connection.query("SELECT \(Double?.none) IS NULL AS n")[0].decode("n", as: Bool.self)
                #expect(isNull)
            }
        }
    }

    @Test func nullIntoNonOptionalNamesTheColumn() throws {
        try withTestPool { pool in
            let error = postgresError {
                try pool.withConnection {
                    _ = try $0.query("SELECT NULL::int8 AS risk_score")[0].decode("risk_score", as: Int.self)
                }
            }
            #expect(error?.code == .decoding)
            #expect(error?.message.contains("\"risk_score\" is NULL") == true)
        }
    }

    @Test(arguments: ["SELECT 'abc'::text AS word", "SELECT true AS word", "SELECT '\\x00'::bytea AS word"])
    func typeMismatchNamesTheColumnAndTypesNotTheValue(sql: String) throws {
        try withTestPool { pool in
            let error = postgresError {
                try pool.withConnection {
                    _ = try $0.query(PostgresQuery(unsafeSQL: sql))[0].decode("word", as: Int.self)
                }
            }
            #expect(error?.code == .decoding)
            #expect(error?.message.contains("\"word\"") == true)
            #expect(error?.message.contains("Int") == true)
            #expect(error?.message.contains("abc") == false)
        }
    }

    @Test func unknownColumnAndIndexAreErrorsNotTraps() throws {
        try withTestPool { pool in
            try pool.withConnection { connection in
                let row = try connection.query("SELECT 1::int4 AS \"camelCase\"")[0]
                #expect(try row.decode("camelCase", as: Int32.self) == 1)
                #expect(try row.decode(0, as: Int32.self) == 1)
                #expect(postgresError { _ = try row.decode("camelcase", as: Int32.self) }?.code == .decoding)
                #expect(postgresError { _ = try row.decode(1, as: Int32.self) }?.code == .decoding)
                #expect(postgresError { _ = try row.decode(-1, as: Int32.self) }?.code == .decoding)
            }
        }
    }
}
