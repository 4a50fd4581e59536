/// The transaction isolation levels PostgreSQL implements (manual 13.2).
public enum IsolationLevel: String, Sendable, CaseIterable {
    /// Each statement sees data committed before it began. PostgreSQL's default.
    case readCommitted = "READ COMMITTED"
    /// The transaction sees one snapshot; concurrent updates of the same row fail with
    /// ``PostgresError/Code/serializationFailure``.
    case repeatableRead = "REPEATABLE READ"
    /// As if transactions ran one at a time; any dangerous interleaving fails with
    /// ``PostgresError/Code/serializationFailure``, so callers must be ready to retry.
    case serializable = "SERIALIZABLE"
}
