import Foundation
import IssuerdPostgres
import IssuerdTestSupport

/// Runs `body` with a pool on a fresh database that is dropped afterwards.
func withTestPool<T>(
    size: Int = 2, acquireTimeout: Duration = .seconds(10), _ body: (PostgresPool) throws -> T
) throws -> T {
    let database = try TestDatabase.create()
    defer { database.drop() }
    let pool = database.makePool(size: size, acquireTimeout: acquireTimeout)
    defer { pool.close() }
    return try body(pool)
}

/// Runs `body` on `count` dedicated threads (not Swift's cooperative pool, which these
/// blocking calls would starve) and waits for all of them.
func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let group = DispatchGroup()
    for index in 0..<count {
        group.enter()
        let thread = Thread {
            body(index)
            group.leave()
        }
        thread.start()
    }
    group.wait()
}

/// Asserts-friendly capture of the error a throwing call produced.
func postgresError(_ body: () throws -> Void) -> PostgresError? {
    do {
        try body()
        return nil
    } catch let error as PostgresError {
        return error
    } catch {
        return PostgresError(code: .init("unexpected \(type(of: error))"), message: "\(error)")
    }
}
