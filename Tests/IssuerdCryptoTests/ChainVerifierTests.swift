import Foundation
import Testing

@testable import IssuerdCrypto

/// Apple chain validation (provisioning spec section 4): the real production chain, and every
/// negative case on a generated Apple-shaped PKI.
@Suite struct ChainVerifierTests {
    // MARK: Real Apple chain

    @Test func productionChainVerifiesAtJanuary2020() throws {
        let verifier = try AppleCertificateChainVerifier(trust: .production)
        let result = verifier.verify(
            [try Fixtures.productionLeaf, try Fixtures.productionIntermediate], at: january2020)
        let chain = try #require(result.chain, "\(String(describing: result.failure))")
        #expect(chain.leafCommonName == "ecc-crypto-services-encipherment_UC6-PROD")
        #expect(chain.intermediateCommonName == "Apple Worldwide Developer Relations CA - G2")
        #expect(chain.leafFingerprintHex == "e423b9ce27fbf4a07c8ccca4550fa9a944fea7d89c191b8f72b90fc5c45c3dd6")
        #expect(chain.leafNotAfter == Date(timeIntervalSince1970: 1_593_555_255))  // 2020-06-30T22:14:15Z
        guard case .p256(let key) = chain.recipientKey else {
            Issue.record("expected a P-256 recipient key")
            return
        }
        #expect(key.x963Representation.count == 65)
    }

    @Test func productionChainIsExpiredNow() throws {
        let verifier = try AppleCertificateChainVerifier(trust: .production)
        let result = verifier.verify([try Fixtures.productionLeaf, try Fixtures.productionIntermediate], at: Date())
        #expect(result.failure?.code == .expired)
        #expect(result.failure?.certificateIndex == 0)
    }

    @Test func productionChainWithoutValidityCheckVerifiesNow() throws {
        let verifier = try AppleCertificateChainVerifier(trust: .production, checkValidity: false)
        #expect(
            verifier.verify([try Fixtures.productionLeaf, try Fixtures.productionIntermediate], at: Date()).chain != nil
        )
    }

    @Test func productionChainBeforeLeafNotBeforeIsNotYetValid() throws {
        let verifier = try AppleCertificateChainVerifier(trust: .production)
        let result = verifier.verify(
            [try Fixtures.productionLeaf, try Fixtures.productionIntermediate],
            at: Date(timeIntervalSince1970: 1_514_764_800))  // 2018-01-01
        #expect(result.failure?.code == .notYetValid)
    }

    @Test func orderRootAndEncodingsDoNotMatter() throws {
        let verifier = try AppleCertificateChainVerifier(trust: .production)
        let leaf = try Fixtures.productionLeaf
        let intermediate = try Fixtures.productionIntermediate
        // Intermediate first, and the root sent along (ignored; the pinned root is used).
        #expect(verifier.verify([intermediate, leaf, try Fixtures.appleRoot], at: january2020).chain != nil)
        // Hex, base64 and base64url text forms.
        let texts = [BinaryEncoding.hexString(leaf), BinaryEncoding.base64URLString(intermediate)]
        #expect(verifier.verify(encoded: texts, at: january2020).chain != nil)
        let base64 = [BinaryEncoding.base64String(leaf), BinaryEncoding.base64String(intermediate)]
        #expect(verifier.verify(encoded: base64, at: january2020).chain != nil)
    }

    @Test func embeddedRootIsPinnedByFingerprint() throws {
        let profile = AppleTrustProfile.production
        #expect(
            BinaryEncoding.hexString(profile.rootFingerprint)
                == "63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179")
        #expect(profile.rootFingerprint == SHA256.hash(try Fixtures.appleRoot))
    }

    @Test func sandboxLeafIsUntrustedInProduction() throws {
        let verifier = try AppleCertificateChainVerifier(trust: .production, checkValidity: false)
        // Sandbox leaf + production intermediate: the leaf's issuer is not there.
        let result = verifier.verify([try Fixtures.sandboxLeaf, try Fixtures.productionIntermediate], at: january2020)
        #expect(result.failure?.code == .missingIntermediate)
    }

    @Test func sandboxProfileRequiresARootAndTheTestIntermediateName() throws {
        let pki = TestPKI.shared
        let profile = try AppleTrustProfile.sandbox(rootPEM: pki.root.certificatePEM)
        #expect(profile.requiredIntermediateCommonName == "Test Apple Worldwide Developers Relations CA - ECC")
        let verifier = try AppleCertificateChainVerifier(trust: profile)
        let result = verifier.verify([pki.eccLeaf.certificateDER, pki.intermediate.certificateDER], at: TestPKI.now)
        #expect(result.failure?.code == .intermediateName)
        expectCryptoError(.invalidKey) { try AppleTrustProfile.sandbox(rootPEM: "not a certificate") }
        expectCryptoError(.invalidKey) { try AppleTrustProfile.custom(rootPEM: pki.eccLeaf.certificatePEM) }
    }

    // MARK: Generated PKI

    private func verifier(checkValidity: Bool = true, cacheCapacity: Int = 64) throws -> AppleCertificateChainVerifier {
        try AppleCertificateChainVerifier(
            trust: try TestPKI.shared.trustProfile, checkValidity: checkValidity, cacheCapacity: cacheCapacity)
    }

    @Test func generatedChainVerifies() throws {
        let pki = TestPKI.shared
        let result = try verifier().verify(
            [pki.eccLeaf.certificateDER, pki.intermediate.certificateDER], at: TestPKI.now)
        let chain = try #require(result.chain, "\(String(describing: result.failure))")
        #expect(chain.trustProfileName == "custom")
        #expect(chain.leafFingerprint == SHA256.hash(pki.eccLeaf.certificateDER))
    }

    @Test func wrongRoot() throws {
        let pki = TestPKI.shared
        let other = try DevelopmentPKI.generate(now: TestPKI.now)
        let result = try verifier().verify(
            [other.eccLeaf.certificateDER, other.intermediate.certificateDER], at: TestPKI.now)
        #expect(result.failure?.code == .untrustedRoot)
        // The other PKI's root sent along is ignored, not trusted.
        let withRoot = try verifier().verify(
            [other.eccLeaf.certificateDER, other.intermediate.certificateDER, other.root.certificateDER],
            at: TestPKI.now)
        #expect(withRoot.failure?.code == .untrustedRoot)
        // A production chain against the development root.
        let production = try verifier(checkValidity: false).verify(
            [try Fixtures.productionLeaf, try Fixtures.productionIntermediate], at: january2020)
        #expect(production.failure?.code == .untrustedRoot)
        _ = pki
    }

    @Test func missingIntermediate() throws {
        let pki = TestPKI.shared
        let result = try verifier().verify([pki.eccLeaf.certificateDER], at: TestPKI.now)
        #expect(result.failure?.code == .missingIntermediate)
        // An unrelated intermediate instead of the right one.
        let stranger = try pki.issueIntermediate(commonName: AppleTrustProfile.productionIntermediateCommonName)
        let wrong = try verifier().verify([pki.eccLeaf.certificateDER, stranger.certificateDER], at: TestPKI.now)
        #expect(wrong.failure?.code == .missingIntermediate)
    }

    @Test func leafIssuedDirectlyByTheRootIsRejected() throws {
        let pki = TestPKI.shared
        let direct = try DevelopmentPKI.issueLeaf(DevelopmentPKI.LeafProfile(now: TestPKI.now), by: pki.root)
        let other = try pki.issueIntermediate(commonName: "Some CA")
        let result = try verifier().verify([direct.certificateDER, other.certificateDER], at: TestPKI.now)
        #expect(result.failure?.code == .missingIntermediate)
    }

    @Test func leafWithoutAppleOID() throws {
        var profile = DevelopmentPKI.LeafProfile(now: TestPKI.now)
        profile.includeAppleMarker = false
        let leaf = try TestPKI.shared.issueLeaf(profile)
        let result = try verifier().verify(
            [leaf.certificateDER, TestPKI.shared.intermediate.certificateDER], at: TestPKI.now)
        #expect(result.failure?.code == .leafNotFound)
    }

    @Test func twoLeavesWithTheOID() throws {
        let pki = TestPKI.shared
        let second = try pki.issueLeaf(DevelopmentPKI.LeafProfile(now: TestPKI.now))
        let result = try verifier().verify(
            [pki.eccLeaf.certificateDER, second.certificateDER, pki.intermediate.certificateDER], at: TestPKI.now)
        #expect(result.failure?.code == .multipleLeaves)
    }

    @Test func nonCriticalAppleOIDIsAccepted() throws {
        var profile = DevelopmentPKI.LeafProfile(now: TestPKI.now)
        profile.appleMarkerCritical = false
        let leaf = try TestPKI.shared.issueLeaf(profile)
        #expect(
            try verifier().verify([leaf.certificateDER, TestPKI.shared.intermediate.certificateDER], at: TestPKI.now)
                .chain != nil)
    }

    /// The unhandled-critical-extension error is accepted for Apple's OID only, never globally.
    @Test func otherUnknownCriticalExtensionIsRejected() throws {
        var profile = DevelopmentPKI.LeafProfile(now: TestPKI.now)
        profile.extraCriticalExtensionOID = "1.2.3.4.5.6.7"
        let leaf = try TestPKI.shared.issueLeaf(profile)
        let result = try verifier().verify(
            [leaf.certificateDER, TestPKI.shared.intermediate.certificateDER], at: TestPKI.now)
        #expect(result.failure?.code == .unhandledCriticalExtension)
    }

    @Test(arguments: [
        ("critical,keyEncipherment", ChainFailure.Code.leafKeyUsage),
        ("critical,keyAgreement", ChainFailure.Code.leafKeyUsage),
        ("critical,digitalSignature", ChainFailure.Code.leafKeyUsage),
    ])
    func wrongKeyUsage(usage: String, code: ChainFailure.Code) throws {
        var profile = DevelopmentPKI.LeafProfile(now: TestPKI.now)
        profile.keyUsage = usage
        let leaf = try TestPKI.shared.issueLeaf(profile)
        let result = try verifier().verify(
            [leaf.certificateDER, TestPKI.shared.intermediate.certificateDER], at: TestPKI.now)
        #expect(result.failure?.code == code)
    }

    @Test func missingKeyUsage() throws {
        var profile = DevelopmentPKI.LeafProfile(now: TestPKI.now)
        profile.keyUsage = nil
        let leaf = try TestPKI.shared.issueLeaf(profile)
        let result = try verifier().verify(
            [leaf.certificateDER, TestPKI.shared.intermediate.certificateDER], at: TestPKI.now)
        #expect(result.failure?.code == .leafKeyUsage)
    }

    @Test func rsaLeafForECCV2AndECCLeafForRSAV2() throws {
        let pki = TestPKI.shared
        let v = try verifier()
        let rsa = v.verify([pki.rsaLeaf.certificateDER, pki.intermediate.certificateDER], at: TestPKI.now, for: .eccV2)
        #expect(rsa.failure?.code == .leafKeyType)
        #expect(
            v.verify([pki.rsaLeaf.certificateDER, pki.intermediate.certificateDER], at: TestPKI.now, for: .rsaV2).chain
                != nil)
        let ecc = v.verify([pki.eccLeaf.certificateDER, pki.intermediate.certificateDER], at: TestPKI.now, for: .rsaV2)
        #expect(ecc.failure?.code == .leafKeyType)
    }

    @Test func p384LeafIsTheWrongKeyType() throws {
        var profile = DevelopmentPKI.LeafProfile(now: TestPKI.now)
        profile.key = .p384
        let leaf = try TestPKI.shared.issueLeaf(profile)
        let result = try verifier().verify(
            [leaf.certificateDER, TestPKI.shared.intermediate.certificateDER], at: TestPKI.now)
        #expect(result.failure?.code == .leafKeyType)
    }

    @Test func expiredAndNotYetValidLeaves() throws {
        let now = TestPKI.now
        var expired = DevelopmentPKI.LeafProfile(now: now)
        expired.notBefore = now.addingTimeInterval(-10 * 86_400)
        expired.notAfter = now.addingTimeInterval(-86_400)
        var future = DevelopmentPKI.LeafProfile(now: now)
        future.notBefore = now.addingTimeInterval(86_400)
        future.notAfter = now.addingTimeInterval(10 * 86_400)
        let pki = TestPKI.shared
        let v = try verifier()
        let a = v.verify([try pki.issueLeaf(expired).certificateDER, pki.intermediate.certificateDER], at: now)
        let b = v.verify([try pki.issueLeaf(future).certificateDER, pki.intermediate.certificateDER], at: now)
        #expect(a.failure?.code == .expired)
        #expect(b.failure?.code == .notYetValid)
        // The same chains pass when the validity check is off.
        let lenient = try verifier(checkValidity: false)
        #expect(
            lenient.verify([try pki.issueLeaf(expired).certificateDER, pki.intermediate.certificateDER], at: now).chain
                != nil)
    }

    @Test func intermediateName() throws {
        let pki = TestPKI.shared
        let renamed = try pki.issueIntermediate(commonName: "Apple Worldwide Developer Relations CA - G3")
        let leaf = try DevelopmentPKI.issueLeaf(DevelopmentPKI.LeafProfile(now: TestPKI.now), by: renamed)
        let result = try verifier().verify([leaf.certificateDER, renamed.certificateDER], at: TestPKI.now)
        #expect(result.failure?.code == .intermediateName)
        #expect(result.failure?.certificateIndex == 1)
        // Without a name requirement the same chain passes.
        let open = try AppleCertificateChainVerifier(trust: try .custom(rootPEM: pki.root.certificatePEM))
        #expect(open.verify([leaf.certificateDER, renamed.certificateDER], at: TestPKI.now).chain != nil)
    }

    @Test func tamperedSignature() throws {
        let pki = TestPKI.shared
        var leaf = pki.eccLeaf.certificateDER
        // The last byte is inside the ECDSA signature's s integer.
        leaf[leaf.count - 1] ^= 0x01
        let result = try verifier().verify([leaf, pki.intermediate.certificateDER], at: TestPKI.now)
        #expect(result.failure?.code == .signature)
        #expect(result.failure?.certificateIndex == 0)
    }

    @Test(arguments: [
        [UInt8](),
        [0x30, 0x82, 0x01],
        Array("hello, not a certificate".utf8),
        [UInt8](repeating: 0x30, count: 40),
    ])
    func garbageDER(garbage: [UInt8]) throws {
        let result = try verifier().verify([garbage, TestPKI.shared.intermediate.certificateDER], at: TestPKI.now)
        #expect(result.failure?.code == .malformedDER)
        #expect(result.failure?.certificateIndex == 0)
    }

    @Test func truncatedAndExtendedDER() throws {
        let leaf = TestPKI.shared.eccLeaf.certificateDER
        let intermediate = TestPKI.shared.intermediate.certificateDER
        let v = try verifier()
        #expect(v.verify([Array(leaf.dropLast(10)), intermediate], at: TestPKI.now).failure?.code == .malformedDER)
        #expect(v.verify([leaf + [0x00], intermediate], at: TestPKI.now).failure?.code == .malformedDER)
        #expect(v.verify([leaf, Array(intermediate.prefix(100))], at: TestPKI.now).failure?.certificateIndex == 1)
    }

    @Test func badTextEncodings() throws {
        let leaf = TestPKI.shared.eccLeaf.certificateDER
        let intermediate = TestPKI.shared.intermediate.certificateDER
        let v = try verifier()
        let good = BinaryEncoding.base64String(intermediate)
        let truncated = String(BinaryEncoding.base64String(leaf).dropLast(3))
        let mixed =
            BinaryEncoding.base64String(leaf).replacingOccurrences(of: "/", with: "_", options: [], range: nil) + "+"
        let notText = "this is not base64!"
        for bad in [truncated, mixed, notText, ""] {
            let result = v.verify(encoded: [bad, good], at: TestPKI.now)
            #expect(result.failure?.code == .malformedDER, "\(bad.prefix(20))")
            #expect(result.failure?.certificateIndex == 0)
        }
    }

    @Test func certificateCountIsBounded() throws {
        let v = try verifier()
        #expect(v.verify([], at: TestPKI.now).failure?.code == .badCount)
        let many = Array(repeating: TestPKI.shared.intermediate.certificateDER, count: 5)
        #expect(v.verify(many, at: TestPKI.now).failure?.code == .badCount)
    }

    // MARK: Cache

    @Test func cacheServesOnlyInsideTheValidityWindow() throws {
        let pki = TestPKI.shared
        let v = try verifier(cacheCapacity: 4)
        let chain = [pki.eccLeaf.certificateDER, pki.intermediate.certificateDER]
        #expect(v.verify(chain, at: TestPKI.now).chain != nil)
        #expect(v.cachedChainCount == 1)
        #expect(v.verify(chain, at: TestPKI.now.addingTimeInterval(60)).chain != nil)
        // Past the leaf's notAfter the cache must not answer: a fresh verification says expired.
        let late = TestPKI.now.addingTimeInterval(800 * 86_400)
        #expect(v.verify(chain, at: late).failure?.code == .expired)
        // Scheme checks still apply to a cached chain.
        #expect(v.verify(chain, at: TestPKI.now, for: .rsaV2).failure?.code == .leafKeyType)
    }

    /// The API path caches by the certificates' text as well, so a repeat needs no decoding;
    /// that entry obeys the same window, and another encoding of the same chain still verifies.
    @Test func encodedChainsAreCachedByTheirTextWithinTheWindow() throws {
        let pki = TestPKI.shared
        let v = try verifier(cacheCapacity: 8)
        let base64 = [pki.eccLeaf.certificateDER, pki.intermediate.certificateDER].map(BinaryEncoding.base64String)
        #expect(v.verify(encoded: base64, at: TestPKI.now).chain != nil)
        #expect(v.cachedChainCount == 2)  // by DER and by text
        #expect(v.verify(encoded: base64, at: TestPKI.now.addingTimeInterval(60)).chain != nil)
        #expect(v.cachedChainCount == 2)
        let hex = [pki.eccLeaf.certificateDER, pki.intermediate.certificateDER].map(BinaryEncoding.hexString)
        #expect(v.verify(encoded: hex, at: TestPKI.now).chain != nil)
        #expect(v.cachedChainCount == 3)
        #expect(v.verify(encoded: base64, at: TestPKI.now.addingTimeInterval(800 * 86_400)).failure?.code == .expired)
        #expect(v.verify(encoded: base64, at: TestPKI.now, for: .rsaV2).failure?.code == .leafKeyType)
        // A text that differs by one character is not a hit.
        var altered = base64
        altered[1] = String(altered[1].dropLast(4)) + "AAAA"
        #expect(v.verify(encoded: altered, at: TestPKI.now).chain == nil)
    }

    @Test func cacheIsBounded() throws {
        let pki = TestPKI.shared
        let v = try verifier(cacheCapacity: 2)
        for _ in 0..<4 {
            let leaf = try pki.issueLeaf(DevelopmentPKI.LeafProfile(now: TestPKI.now))
            #expect(v.verify([leaf.certificateDER, pki.intermediate.certificateDER], at: TestPKI.now).chain != nil)
        }
        #expect(v.cachedChainCount == 2)
        #expect(v.verify([[0x30]], at: TestPKI.now).failure != nil)
        #expect(v.cachedChainCount == 2)
    }

    @Test func failuresAreNotCached() throws {
        let v = try verifier()
        var profile = DevelopmentPKI.LeafProfile(now: TestPKI.now)
        profile.includeAppleMarker = false
        let leaf = try TestPKI.shared.issueLeaf(profile)
        _ = v.verify([leaf.certificateDER, TestPKI.shared.intermediate.certificateDER], at: TestPKI.now)
        #expect(v.cachedChainCount == 0)
    }
}
