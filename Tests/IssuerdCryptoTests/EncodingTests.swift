import Testing

@testable import IssuerdCrypto

/// Strict hex/base64/base64url codecs and the PassKit auto-detection (docs/crypto.md).
@Suite struct EncodingTests {
    @Test(arguments: [
        ([UInt8](), "", "", ""),
        ([0x66], "66", "Zg==", "Zg"),
        ([0x66, 0x6f], "666f", "Zm8=", "Zm8"),
        ([0x66, 0x6f, 0x6f], "666f6f", "Zm9v", "Zm9v"),
        ([0xfb, 0xff, 0xfe], "fbfffe", "+//+", "-__-"),
    ])
    func roundTrips(bytes: [UInt8], hex: String, base64: String, base64url: String) throws {
        #expect(BinaryEncoding.hexString(bytes) == hex)
        #expect(BinaryEncoding.base64String(bytes) == base64)
        #expect(BinaryEncoding.base64URLString(bytes) == base64url)
        #expect(try BinaryEncoding.decodeHex(hex) == bytes)
        #expect(try BinaryEncoding.decodeBase64(base64) == bytes)
        #expect(try BinaryEncoding.decodeBase64URL(base64url) == bytes)
    }

    @Test(arguments: ["abc", "zz", "0g", "aB", " 00", "00\n"])
    func badHex(text: String) {
        expectCryptoError(.invalidEncoding) { try BinaryEncoding.decodeHex(text) }
    }

    @Test(arguments: ["Zg", "Zg=", "Zg===", "Zh==", "Z", "Zm9v\n", "Zm 9v", "-__-", "Zm9v====", "=Zm9"])
    func badBase64(text: String) {
        expectCryptoError(.invalidEncoding) { try BinaryEncoding.decodeBase64(text) }
    }

    @Test(arguments: ["+//+", "Zh", "Z", "Zg=", "a=bc"])
    func badBase64URL(text: String) {
        expectCryptoError(.invalidEncoding) { try BinaryEncoding.decodeBase64URL(text) }
    }

    @Test(arguments: [
        ("9c023092", [UInt8]([0x9c, 0x02, 0x30, 0x92]), BinaryEncoding.hex),
        ("9C023092", [0x9c, 0x02, 0x30, 0x92], .hex),
        ("nAIwkg==", [0x9c, 0x02, 0x30, 0x92], .base64),
        ("nAIwkg", [0x9c, 0x02, 0x30, 0x92], .base64URL),
        ("nAIwkg==", [0x9c, 0x02, 0x30, 0x92], .base64),
        ("MEUCIQ+/", [0x30, 0x45, 0x02, 0x21, 0x0f, 0xbf], .base64),
        ("MEUCIQ-_", [0x30, 0x45, 0x02, 0x21, 0x0f, 0xbf], .base64URL),
    ])
    func detection(text: String, bytes: [UInt8], encoding: BinaryEncoding) throws {
        let decoded = try BinaryEncoding.decodeDetectingEncoding(text)
        #expect(decoded.bytes == bytes)
        #expect(decoded.encoding == encoding)
    }

    /// Every DER value's base64 starts with "M" (0x30), so it is never read as hex.
    @Test func derValuesAreNeverHex() throws {
        for _ in 0..<50 {
            let der = [0x30] + (try SecureRandom.bytes(count: 70))
            #expect(try BinaryEncoding.decodeDetectingEncoding(BinaryEncoding.base64String(der)).bytes == der)
            #expect(try BinaryEncoding.decodeDetectingEncoding(BinaryEncoding.base64URLString(der)).bytes == der)
            #expect(try BinaryEncoding.decodeDetectingEncoding(BinaryEncoding.hexString(der)).bytes == der)
        }
    }

    @Test(arguments: ["", "ab+c_d==", "%%%%", "Zg=", "9c02309", "aBcD12\n"])
    func detectionRejects(text: String) {
        expectCryptoError(.invalidEncoding) { try BinaryEncoding.decodeDetectingEncoding(text) }
    }

    @Test func oversizedTextIsRejected() {
        let big = String(repeating: "A", count: BinaryEncoding.maximumTextLength + 4)
        expectCryptoError(.invalidEncoding) { try BinaryEncoding.decodeDetectingEncoding(big) }
    }

    @Test func certificateFiles() throws {
        let pki = TestPKI.shared
        let der = pki.eccLeaf.certificateDER
        #expect(try CertificateDecoding.certificates(inFile: der) == [der])
        let pem = pki.eccLeaf.certificatePEM + pki.intermediate.certificatePEM
        #expect(
            try CertificateDecoding.certificates(inFile: Array(pem.utf8)) == [der, pki.intermediate.certificateDER])
        let base64 = "  " + BinaryEncoding.base64String(der) + "\n"
        #expect(try CertificateDecoding.certificates(inFile: Array(base64.utf8)) == [der])
        let brokenPEM = pki.eccLeaf.certificatePEM + "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"
        expectCryptoError(.invalidEncoding) { try CertificateDecoding.certificates(inFile: Array(brokenPEM.utf8)) }
        expectCryptoError(.invalidEncoding) { try CertificateDecoding.certificates(inFile: []) }
    }
}
