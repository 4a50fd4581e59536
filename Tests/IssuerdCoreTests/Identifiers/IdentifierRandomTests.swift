import Foundation
import Testing

@testable import IssuerdCore

@Suite struct IdentifierRandomTests {
    /// Draws that cross the pool's 4,096-byte pages are filled whole, and look random: every
    /// byte value turns up, and no two 16-byte draws repeat.
    @Test func fillsAcrossPagesWithEveryByteValue() {
        var counts = [Int](repeating: 0, count: 256)
        var draws = Set<[UInt8]>()
        for size in [1, 7, 16, 4095, 4096, 4097, 10_000] {
            var bytes = [UInt8](repeating: 0, count: size)
            bytes.withUnsafeMutableBytes { IdentifierRandom.fill($0) }
            for byte in bytes { counts[Int(byte)] += 1 }
        }
        for _ in 0..<1_000 {
            var bytes = [UInt8](repeating: 0, count: 16)
            bytes.withUnsafeMutableBytes { IdentifierRandom.fill($0) }
            draws.insert(bytes)
        }
        #expect(counts.allSatisfy { $0 > 0 })
        #expect(draws.count == 1_000)
        var nothing: [UInt8] = []
        nothing.withUnsafeMutableBytes { IdentifierRandom.fill($0) }
    }

    /// Threads drawing at once never get the same bytes (the pool hands each byte out once).
    @Test func concurrentDrawsAreDistinct() async {
        let ids = await withTaskGroup(of: [UUID].self) { group in
            for _ in 0..<8 {
                group.addTask { (0..<2_000).map { _ in UUID.random() } }
            }
            var all: [UUID] = []
            for await batch in group { all += batch }
            return all
        }
        #expect(Set(ids).count == 16_000)
    }
}
