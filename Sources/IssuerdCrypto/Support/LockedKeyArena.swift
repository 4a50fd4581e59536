import COpenSSL
import Foundation

/// Page-aligned memory locked into RAM (`mlock`: never written to swap or a core dump's
/// swapped pages) holding the long-lived keys of a ``MasterKeyRing``. Each key is a slice
/// whose ``SecureBytes`` wipes it on release; the arena wipes, unlocks and frees the whole
/// region when the last slice goes.
///
/// Why one arena and not one locked page per key: `munlock` is per page and does not nest, so
/// two keys sharing a page would unlock each other; and a small `RLIMIT_MEMLOCK` (64 KiB in
/// many containers) is enough for one region of all ring keys.
final class LockedKeyArena {
    private let region: UnsafeMutableRawBufferPointer
    private var used = 0
    /// Whether `mlock` succeeded (it fails when `RLIMIT_MEMLOCK` is too small); the keys are
    /// wiped on release either way.
    let isLocked: Bool

    init(byteCount: Int) {
        let page = max(Int(sysconf(Int32(_SC_PAGESIZE))), 4096)
        let size = max((byteCount + page - 1) / page * page, page)
        region = .allocate(byteCount: size, alignment: page)
        region.initializeMemory(as: UInt8.self, repeating: 0)
        isLocked = mlock(region.baseAddress!, size) == 0
        // Keep the region out of core dumps as well (best effort).
        _ = madvise(region.baseAddress!, size, MADV_DONTDUMP)
    }

    deinit {
        OPENSSL_cleanse(region.baseAddress, region.count)
        if isLocked { munlock(region.baseAddress!, region.count) }
        region.deallocate()
    }

    /// Copies `key` into the arena; the copy lives as long as any value referring to it.
    ///
    /// - Throws: ``CryptoError/Code/libraryFailure`` when the arena is full (a sizing bug).
    func copy(_ key: SymmetricKey) throws -> SymmetricKey {
        let count = key.byteCount
        let aligned = (count + 15) & ~15
        guard used + aligned <= region.count else { throw CryptoError(.libraryFailure, "locked key arena is full") }
        let slice = UnsafeMutableRawBufferPointer(rebasing: region[used..<(used + count)])
        key.withUnsafeBytes { slice.copyMemory(from: $0) }
        used += aligned
        return SymmetricKey(secure: SecureBytes(storage: SecureBytes.Storage(slice: slice, of: self), count: count))
    }
}
