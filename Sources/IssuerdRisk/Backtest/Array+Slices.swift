import Dispatch

extension Array {
    /// `count` elements, element `i` being `element(i)`, made in `slices` contiguous runs at the
    /// same time (`DispatchQueue.concurrentPerform`): for large arrays whose making on one core
    /// left the other idle (the history index's shards).
    public init(count: Int, inSlices slices: Int, _ element: @Sendable (Int) -> Element) {
        let slices = Swift.max(1, Swift.min(slices, count))
        let size = (count + slices - 1) / slices
        self.init(unsafeUninitializedCapacity: count) { buffer, initialized in
            let target = DisjointWrites(buffer: buffer)
            DispatchQueue.concurrentPerform(iterations: slices) { task in
                for index in (task * size)..<Swift.min(count, (task + 1) * size) {
                    (target.buffer.baseAddress! + index).initialize(to: element(index))
                }
            }
            initialized = count
        }
    }
}

/// @unchecked Sendable: the slices of ``Swift/Array/init(count:inSlices:_:)`` write
/// disjoint ranges of the buffer, which is read only once they are all done.
private struct DisjointWrites<Element>: @unchecked Sendable {
    let buffer: UnsafeMutableBufferPointer<Element>
}
