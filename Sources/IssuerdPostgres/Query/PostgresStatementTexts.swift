import IssuerdCore

/// Statement texts kept by shape, for a statement built for every request whose text changes
/// only with a few things about the request (its shape), not with its values.
///
/// The first build of a shape writes the text and keeps it; later builds of that shape run the
/// same builder in bindings-only mode (``PostgresQuery/StringInterpolation/init(bindingsOnly:)``)
/// and pair the kept text with the new bindings. The builder must write the same text for the
/// same shape: everything it writes as text (literals, `appendText`) may depend on the shape
/// only, and every value goes in as a binding.
package final class PostgresStatementTexts<Shape: Hashable & Sendable>: Sendable {
    private let texts = Lock<[Shape: String]>([:])
    private let limit: Int

    /// - Parameter limit: Shapes kept at most; past it every kept text is dropped (rulesets
    ///   reloaded many times make new shapes, and nothing should grow without bound).
    package init(limit: Int = 64) {
        self.limit = limit
    }

    /// The statement for `shape`, built by `build` (text and bindings the first time, bindings
    /// only after that).
    package func query(
        _ shape: Shape, literalCapacity: Int, interpolations: Int,
        build: (inout PostgresQuery.StringInterpolation) -> Void
    ) -> PostgresQuery {
        if let text = texts.withLock({ $0[shape] }) {
            var bindings = PostgresQuery.StringInterpolation(bindingsOnly: interpolations)
            build(&bindings)
            return PostgresQuery(reusing: text, bindings: bindings)
        }
        var sql = PostgresQuery.StringInterpolation(
            literalCapacity: literalCapacity, interpolationCount: interpolations)
        build(&sql)
        let query = PostgresQuery(stringInterpolation: sql)
        texts.withLock { texts in
            if texts.count >= limit { texts.removeAll() }
            texts[shape] = query.sql
        }
        return query
    }

    /// Forgets every kept text (tests: the next build of each shape writes it again).
    package func removeAll() {
        texts.withLock { $0.removeAll() }
    }
}
