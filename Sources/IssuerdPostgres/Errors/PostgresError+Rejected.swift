extension PostgresError {
    /// NUL bytes in text (refused by libpq before sending), data exceptions (SQLSTATE class 22),
    /// a column's CHECK (23514: a length the handler's validation should have refused first)
    /// and program limits such as an over-long index entry (54000).
    public var isRejectedValue: Bool {
        code == .invalidParameter || (sqlState.map { $0.hasPrefix("22") || $0 == "23514" || $0 == "54000" } ?? false)
    }
}
