import COpenSSL
import Foundation

/// Turns what support engineers and apps hand us into certificate DER: files of DER, PEM
/// (one or more `CERTIFICATE` blocks) or base64/hex text, and API strings in hex, base64 or
/// base64url.
public enum CertificateDecoding {
    /// The largest certificate file read (a chain is a few KiB).
    public static let maximumFileLength = 256 * 1024

    /// Decodes a certificate file's contents into DER certificates.
    ///
    /// - Parameter bytes: Raw DER, PEM text, or one base64/hex text (whitespace allowed around it).
    /// - Returns: One DER per certificate, in file order. DER is returned as-is; the chain
    ///   verifier checks that it parses.
    /// - Throws: ``CryptoError/Code/invalidEncoding`` when nothing decodes.
    public static func certificates(inFile bytes: [UInt8]) throws -> [[UInt8]] {
        guard !bytes.isEmpty, bytes.count <= maximumFileLength else {
            throw CryptoError(.invalidEncoding, "certificate file of \(bytes.count) bytes")
        }
        if bytes[0] == 0x30 { return [bytes] }
        let text = String(decoding: bytes, as: UTF8.self)
        if text.contains("-----BEGIN") { return try pemCertificates(text) }
        let trimmed = text.filter { !$0.isWhitespace }
        return [try BinaryEncoding.decodeDetectingEncoding(trimmed).bytes]
    }

    /// Decodes one API string (hex, base64 or base64url; see
    /// ``BinaryEncoding/decodeDetectingEncoding(_:)``).
    public static func certificate(fromText text: String) throws -> [UInt8] {
        try BinaryEncoding.decodeDetectingEncoding(text).bytes
    }

    /// Every `CERTIFICATE` block of a PEM text, through OpenSSL's PEM reader.
    static func pemCertificates(_ text: String) throws -> [[UInt8]] {
        let blocks = text.components(separatedBy: "-----BEGIN CERTIFICATE-----").count - 1
        return try KeyCoding.withMemoryBIO(text) { bio in
            var out: [[UInt8]] = []
            while out.count < 16, let x509 = PEM_read_bio_X509(bio, nil, nil, nil) {
                guard let handle = try? X509Handle(taking: x509) else { break }
                out.append(handle.der)
            }
            // The loop ends on "no start line"; that entry is expected, anything else is not.
            _ = OpenSSLErrorQueue.drain()
            guard !out.isEmpty, out.count == blocks else {
                throw CryptoError(.invalidEncoding, "\(blocks) PEM CERTIFICATE blocks, \(out.count) readable")
            }
            return out
        }
    }
}
