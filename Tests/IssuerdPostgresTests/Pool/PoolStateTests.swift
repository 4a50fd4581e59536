import Testing

@testable import IssuerdPostgres

@Suite struct PoolStateTests {
    @Test func opensUpToCapacityThenWaits() {
        var state = PoolState<String>(capacity: 2)
        guard case .open = state.acquire(), case .open = state.acquire() else {
            Issue.record("the first two borrowers should open connections")
            return
        }
        guard case .wait = state.acquire() else {
            Issue.record("a third borrower must wait")
            return
        }
        #expect(state.leased == 2)
    }

    @Test func returnedConnectionIsReusedMostRecentFirst() {
        var state = PoolState<String>(capacity: 2)
        _ = state.acquire()
        _ = state.acquire()
        #expect(state.release("a") == nil)
        #expect(state.release("b") == nil)
        guard case .use(let connection) = state.acquire() else {
            Issue.record("an idle connection should be reused")
            return
        }
        #expect(connection == "b")
        #expect(state.leased == 1 && state.idle == ["a"])
    }

    @Test func discardedConnectionFreesItsSlot() {
        var state = PoolState<String>(capacity: 1)
        _ = state.acquire()
        #expect(state.release(nil) == nil)
        guard case .open = state.acquire() else {
            Issue.record("the freed slot should allow a new connection")
            return
        }
        state.openFailed()
        #expect(state.leased == 0)
    }

    @Test func closingHandsBackIdleAndRejectsLateReturns() {
        var state = PoolState<String>(capacity: 2)
        _ = state.acquire()
        _ = state.acquire()
        _ = state.release("idle")
        #expect(state.close() == ["idle"])
        #expect(state.release("late") == "late")
        guard case .closed = state.acquire() else {
            Issue.record("a closed pool must refuse borrowers")
            return
        }
        #expect(state.leased == 0)
    }

    @Test func backoffGrowsAndStaysBounded() {
        for attempt in 1...20 {
            let delay = PostgresPool.backoff(attempt: attempt)
            #expect(delay > 0 && delay <= 0.064 * 1.5)
        }
    }
}
