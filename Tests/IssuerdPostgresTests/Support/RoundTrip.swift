import IssuerdPostgres

/// Stores `values` in a temporary column of `sqlType` and reads them back in order, so each
/// value crosses the wire twice and is held by the server in its real type in between.
func roundTrip<T: PostgresEncodable & PostgresDecodable>(
    _ values: [T], as sqlType: String, on connection: PostgresConnection
) throws -> [T] {
    try connection.execute(
        unsafeSQL:
            "DROP TABLE IF EXISTS round_trip; CREATE TEMP TABLE round_trip (position int PRIMARY KEY, value \(sqlType))"
    )
    for (position, value) in values.enumerated() {
        try connection.execute("INSERT INTO round_trip (position, value) VALUES (\(Int32(position)), \(value))")
    }
    return try connection.query("SELECT value FROM round_trip ORDER BY position").map {
        try $0.decode("value", as: T.self)
    }
}
