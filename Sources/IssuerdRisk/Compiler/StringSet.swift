/// An immutable hash set of strings for list membership, hashed with FNV-1a over UTF-8.
///
/// `Set<String>` seeds and finalises a SipHash per lookup, which cost more than the rest of a
/// list rule. List contents come from the issuer's own files, not from requests, so the
/// flooding resistance of a seeded hash is not needed here; a lookup still compares the full
/// string, so a collision can only cost time, never a wrong answer.
struct StringSet: Sendable {
    private let slots: [Int32]
    private let values: [String]
    private let mask: Int

    init(_ strings: some Collection<String>) {
        let unique = Array(Set(strings))
        var capacity = 8
        while capacity < unique.count * 2 { capacity <<= 1 }
        var slots = [Int32](repeating: -1, count: capacity)
        for (index, value) in unique.enumerated() {
            var slot = Self.hash(value) & (capacity - 1)
            while slots[slot] >= 0 { slot = (slot + 1) & (capacity - 1) }
            slots[slot] = Int32(index)
        }
        self.slots = slots
        self.values = unique
        self.mask = capacity - 1
    }

    func contains(_ value: String) -> Bool {
        var slot = Self.hash(value) & mask
        while true {
            let index = slots[slot]
            if index < 0 { return false }
            if values[Int(index)] == value { return true }
            slot = (slot + 1) & mask
        }
    }

    private static func hash(_ value: String) -> Int {
        var copy = value
        return copy.withUTF8 { bytes in
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in bytes {
                hash ^= UInt64(byte)
                hash &*= 0x0000_0100_0000_01b3
            }
            return Int(truncatingIfNeeded: hash ^ (hash >> 29))
        }
    }
}
