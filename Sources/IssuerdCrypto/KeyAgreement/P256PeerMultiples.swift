import COpenSSL
import IssuerdCore
import Synchronization

/// ECDH with a recipient key that many seals share, made as cheap as generating a key.
///
/// ECDH multiplies the recipient's point by the ephemeral scalar. For an arbitrary point OpenSSL
/// first computes a small window of that point's multiples, on every call (about 29 µs); for a
/// group's generator it reads a table of multiples computed once (about 5 µs). PassKit seals to
/// Apple's leaf key, the same for months, and the chain cache hands every request the same
/// ``P256/KeyAgreement/PublicKey``. So on the second seal to a key a P-256 group is made whose
/// generator is that key, OpenSSL builds its table (`EC_GROUP_precompute_mult`: about 22 ms and
/// 150 KiB, once), and later seals multiply through it.
///
/// Both ways are OpenSSL's own multiplications, both constant-time in the secret scalar (the table
/// is read by constant-time gathers, as key generation reads the generator's), and both give the
/// same point: `ECCV2VectorTests` holds both to Apple's known-answer vectors and to each other.
/// At most ``tableLimit`` tables live at once; past that, seals take the per-call way.
final class P256PeerMultiples: Sendable {
    /// Tables alive in the process (each about 150 KiB).
    private static let liveTables = Atomic<Int>(0)
    /// The most tables alive at once: more recipients than this is not PassKit's traffic.
    static let tableLimit = 8

    private struct State {
        /// The recipient's point on the standard group, once read from its key.
        var point: ECPointHandle?
        var table: ECGroupHandle?
        var seals = 0
        var building = false
    }
    private let state = Lock(State())
    /// The recipient's key.
    private let peer: PKeyHandle
    /// `state.table`'s address once it is set (it never changes after; 0 before), for seals to
    /// read without the lock.
    private let published = Atomic<UInt>(0)

    init(peer: PKeyHandle) { self.peer = peer }

    /// True once later seals go through the table.
    var hasTable: Bool { published.load(ordering: .acquiring) != 0 }

    /// Z, the x-coordinate of `scalar`·`peer`, 32 bytes big-endian.
    func sharedSecret(_ scalar: ECScalar, context: BNContext) throws -> SharedSecret {
        if let raw = UnsafeMutableRawPointer(bitPattern: published.load(ordering: .acquiring)) {
            // Owned by `state.table` for as long as this object lives.
            return try Self.multiply(
                scalar, through: Unmanaged<ECGroupHandle>.fromOpaque(raw).takeUnretainedValue(), context)
        }
        let (point, build) = try state.withLock { state throws -> (ECPointHandle, Bool) in
            state.seals += 1
            let point = try state.point ?? Self.point(of: peer)
            state.point = point
            let build =
                state.table == nil && !state.building && state.seals >= 2
                && Self.liveTables.load(ordering: .relaxed) < Self.tableLimit
            if build { state.building = true }
            return (point, build)
        }
        // Outside the lock: other seals meanwhile take the per-call way. A table that cannot be
        // built leaves this key on that way for good (`building` stays set).
        if build, let table = try? Self.table(for: point), publish(table) {
            return try Self.multiply(scalar, through: table, context)
        }
        let product = try ECPointHandle(on: P256Group.standard)
        guard
            EC_POINT_mul(P256Group.standard, product.pointer, nil, point.pointer, scalar.pointer, context.pointer) == 1
        else {
            throw CryptoError(.libraryFailure, "ECDH multiplication failed")
        }
        return SharedSecret(bytes: try product.secretX(on: P256Group.standard, in: context))
    }

    /// `scalar` times the generator of `table`'s group, through its precomputed multiples.
    private static func multiply(
        _ scalar: ECScalar, through table: ECGroupHandle, _ context: BNContext
    ) throws
        -> SharedSecret
    {
        let product = try ECPointHandle(on: table.pointer)
        guard EC_POINT_mul(table.pointer, product.pointer, scalar.pointer, nil, nil, context.pointer) == 1 else {
            throw CryptoError(.libraryFailure, "ECDH multiplication failed")
        }
        return SharedSecret(bytes: try product.secretX(on: table.pointer, in: context))
    }

    /// Keeps `table` and publishes it, unless one already was (then `table` is dropped).
    private func publish(_ table: ECGroupHandle) -> Bool {
        state.withLock { state in
            guard state.table == nil else { return false }
            state.table = table
            Self.liveTables.add(1, ordering: .relaxed)
            published.store(UInt(bitPattern: Unmanaged.passUnretained(table).toOpaque()), ordering: .releasing)
            return true
        }
    }

    deinit {
        if published.load(ordering: .acquiring) != 0 { Self.liveTables.subtract(1, ordering: .relaxed) }
    }

    /// Builds the table now rather than on the second seal (tests).
    func prepareTable() throws {
        let point = try state.withLock { state throws -> ECPointHandle in
            let point = try state.point ?? Self.point(of: peer)
            state.point = point
            return point
        }
        _ = publish(try Self.table(for: point))
    }

    private static func point(of peer: PKeyHandle) throws -> ECPointHandle {
        let encoded = try ECKeyCoding.x963(of: peer)
        let point = try ECPointHandle(on: P256Group.standard)
        guard EC_POINT_oct2point(P256Group.standard, point.pointer, encoded, encoded.count, nil) == 1 else {
            throw CryptoError(.invalidKey, "the recipient's P-256 point could not be read")
        }
        return point
    }

    /// A P-256 group whose generator is `point`, with OpenSSL's table of its multiples.
    private static func table(for point: ECPointHandle) throws -> ECGroupHandle {
        guard let group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1) else {
            throw CryptoError(.libraryFailure, "no P-256 group")
        }
        let handle = ECGroupHandle(taking: group)
        guard
            EC_GROUP_set_generator(
                group, point.pointer, EC_GROUP_get0_order(P256Group.standard),
                EC_GROUP_get0_cofactor(P256Group.standard)) == 1,
            issuerd_EC_GROUP_precompute_mult(group, nil) == 1
        else {
            _ = OpenSSLErrorQueue.drain()
            throw CryptoError(.libraryFailure, "the recipient's table of multiples could not be built")
        }
        return handle
    }
}

/// The standard P-256 group, made once; OpenSSL only reads a group it multiplies on.
enum P256Group {
    nonisolated(unsafe) static let standard: OpaquePointer = {
        guard let group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1) else {
            fatalError("OpenSSL has no P-256 group")
        }
        return group
    }()

    /// The 65-byte uncompressed encoding of `scalar`·G.
    static func x963(ofGeneratorTimes scalar: ECScalar, context: BNContext) throws -> [UInt8] {
        let point = try ECPointHandle(on: standard)
        guard EC_POINT_mul(standard, point.pointer, scalar.pointer, nil, nil, context.pointer) == 1 else {
            throw CryptoError(.libraryFailure, "P-256 key generation failed")
        }
        var out = [UInt8](repeating: 0, count: P256.x963ByteCount)
        let written = EC_POINT_point2oct(
            standard, point.pointer, POINT_CONVERSION_UNCOMPRESSED, &out, out.count, context.pointer)
        guard written == P256.x963ByteCount else {
            throw CryptoError(.libraryFailure, "could not export the P-256 public point")
        }
        return out
    }
}

/// A secret P-256 scalar in OpenSSL's secure heap when it has one, cleared when released.
final class ECScalar {
    let pointer: OpaquePointer

    private init(taking pointer: OpaquePointer) {
        BN_set_flags(pointer, BN_FLG_CONSTTIME)
        self.pointer = pointer
    }

    deinit { BN_clear_free(pointer) }

    /// A uniformly random scalar in [1, n−1], from OpenSSL's private generator (what its key
    /// generation draws).
    static func random() throws -> ECScalar {
        guard let number = BN_secure_new() else { throw CryptoError(.libraryFailure, "BN_secure_new failed") }
        let scalar = ECScalar(taking: number)
        repeat {
            guard BN_priv_rand_range(number, EC_GROUP_get0_order(P256Group.standard)) == 1 else {
                throw CryptoError(.libraryFailure, "no random P-256 scalar")
            }
        } while BN_is_zero(number) == 1
        return scalar
    }

    /// A big-endian scalar as given (the caller checks its range).
    convenience init(bigEndian bytes: [UInt8]) throws {
        guard let number = BN_secure_new() else { throw CryptoError(.libraryFailure, "BN_secure_new failed") }
        self.init(taking: number)
        guard BN_bin2bn(bytes, Int32(bytes.count), number) != nil else {
            throw CryptoError(.libraryFailure, "BN_bin2bn failed")
        }
    }

    /// The private scalar of a P-256 key.
    convenience init(of key: PKeyHandle) throws {
        var number: OpaquePointer?
        guard EVP_PKEY_get_bn_param(key.pointer, ParamName.privateKey.pointer, &number) == 1, let number else {
            throw CryptoError(.invalidKey, "not a P-256 private key")
        }
        self.init(taking: number)
    }
}

/// Scratch space for one seal's multiplications (secure heap when there is one).
final class BNContext {
    let pointer: OpaquePointer

    init() throws {
        guard let context = BN_CTX_secure_new() else { throw CryptoError(.libraryFailure, "BN_CTX_secure_new failed") }
        pointer = context
    }

    deinit { BN_CTX_free(pointer) }
}

/// Owns one `EC_POINT`.
final class ECPointHandle: @unchecked Sendable {
    // @unchecked Sendable: a recipient's point is never changed after it is read.
    let pointer: OpaquePointer

    init(on group: OpaquePointer) throws {
        guard let point = EC_POINT_new(group) else { throw CryptoError(.libraryFailure, "EC_POINT_new failed") }
        pointer = point
    }

    deinit { EC_POINT_clear_free(pointer) }

    /// The affine x-coordinate, 32 bytes big-endian, in wiped-on-release storage; refuses the
    /// point at infinity, as OpenSSL's ECDH does.
    func secretX(on group: OpaquePointer, in context: BNContext) throws -> SecureBytes {
        guard let x = BN_secure_new() else { throw CryptoError(.libraryFailure, "BN_secure_new failed") }
        defer { BN_clear_free(x) }
        guard EC_POINT_is_at_infinity(group, pointer) == 0,
            EC_POINT_get_affine_coordinates(group, pointer, x, nil, context.pointer) == 1
        else {
            throw CryptoError(.invalidKey, "ECDH gave the point at infinity")
        }
        return try SecureBytes(count: P256.scalarByteCount) { out in
            guard
                BN_bn2binpad(x, out.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(P256.scalarByteCount))
                    == Int32(P256.scalarByteCount)
            else {
                throw CryptoError(.libraryFailure, "ECDH secret does not fit 32 bytes")
            }
        }
    }
}

/// Owns one `EC_GROUP`.
final class ECGroupHandle: @unchecked Sendable {
    // @unchecked Sendable: set up before it is shared, then only read by multiplications.
    let pointer: OpaquePointer

    init(taking pointer: OpaquePointer) { self.pointer = pointer }

    deinit { EC_GROUP_free(pointer) }
}
