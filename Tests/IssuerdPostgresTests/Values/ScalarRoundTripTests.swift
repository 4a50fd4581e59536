import Foundation
import IssuerdPostgres
import Testing

@Suite struct ScalarRoundTripTests {
    @Test func integersOfEveryWidthKeepTheirExtremes() throws {
        try withTestPool { pool in
            try pool.withConnection { connection in
                #expect(
                    try roundTrip([Int.min, -1, 0, 1, Int.max], as: "int8", on: connection) == [
                        Int.min, -1, 0, 1, Int.max,
                    ])
                #expect(try roundTrip([Int64.min, Int64.max], as: "int8", on: connection) == [Int64.min, Int64.max])
                #expect(
                    try roundTrip([Int32.min, 0, Int32.max], as: "int4", on: connection) == [Int32.min, 0, Int32.max])
                #expect(
                    try roundTrip([Int16.min, 7, Int16.max], as: "int2", on: connection) == [Int16.min, 7, Int16.max])
                // The server computes with the bound value, so it really arrived as a number.
                let doubled = try connection.query("SELECT (\(Int32(21)) * 2)::int4 AS v")[0].decode(
                    "v", as: Int32.self)
                #expect(doubled == 42)
            }
        }
    }

    @Test func narrowIntegerRefusesAWiderValueItCannotHold() throws {
        try withTestPool { pool in
            let error = postgresError {
                try pool.withConnection {
                    _ = try $0.query("SELECT 3000000000::int8 AS big")[0].decode("big", as: Int32.self)
                }
            }
            #expect(error?.code == .decoding)
            #expect(error?.message.contains("\"big\"") == true)
            #expect(error?.message.contains("3000000000") == false)
        }
    }

    @Test func booleansAndDoubles() throws {
        try withTestPool { pool in
            try pool.withConnection { connection in
                #expect(try roundTrip([true, false], as: "boolean", on: connection) == [true, false])
                let doubles: [Double] = [
                    0, -0.0, 0.1, -1e300, 1.0 / 3.0, .greatestFiniteMagnitude, .leastNonzeroMagnitude, .infinity,
                    -.infinity,
                ]
                #expect(try roundTrip(doubles, as: "float8", on: connection) == doubles)
                let nan = try roundTrip([Double.nan], as: "float8", on: connection)
                #expect(nan.first?.isNaN == true)
                let isExact = try connection.query("SELECT \(0.1) = 0.1::float8 AS same")[0].decode(
                    "same", as: Bool.self)
                #expect(isExact)
            }
        }
    }

    @Test func uuidsRoundTripAndMatchTheServersSpelling() throws {
        try withTestPool { pool in
            try pool.withConnection { connection in
                let ids = [UUID(), UUID(), UUID(uuidString: "00000000-0000-0000-0000-000000000000")!]
                #expect(try roundTrip(ids, as: "uuid", on: connection) == ids)
                let known = UUID(uuidString: "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11")!
                let same = try connection.query(
                    "SELECT \(known) = 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid AS same")
                #expect(try same[0].decode("same", as: Bool.self))
            }
        }
    }
}
