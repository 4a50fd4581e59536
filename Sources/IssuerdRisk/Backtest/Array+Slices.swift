import Dispatch

extension Array {
    /// `count` elements, element `i` being `element(i)`, made in `slices` contiguous runs at the
    /// same time (`DispatchQueue.concurrentPerform`), and `alongside`, when given, as one more
    /// task beside them: for the backtest's large arrays, whose making on one core left the other
    /// idle (the window's merge, the history index's shards).
    public init(
        count: Int, inSlices slices: Int, alongside: (@Sendable () -> Void)? = nil,
        _ element: @Sendable (Int) -> Element
    ) {
        let slices = Swift.max(1, Swift.min(slices, count))
        let size = (count + slices - 1) / slices
        self.init(unsafeUninitializedCapacity: count) { buffer, initialized in
            let target = DisjointWrites(buffer: buffer)
            DispatchQueue.concurrentPerform(iterations: slices + (alongside == nil ? 0 : 1)) { task in
                guard task < slices else {
                    alongside?()
                    return
                }
                for index in (task * size)..<Swift.min(count, (task + 1) * size) {
                    (target.buffer.baseAddress! + index).initialize(to: element(index))
                }
            }
            initialized = count
        }
    }
}

/// @unchecked Sendable: the slices of ``Swift/Array/init(count:inSlices:alongside:_:)`` write
/// disjoint ranges of the buffer, which is read only once they are all done.
private struct DisjointWrites<Element>: @unchecked Sendable {
    let buffer: UnsafeMutableBufferPointer<Element>
}
