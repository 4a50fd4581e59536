import Foundation
import IssuerdCore
import IssuerdCrypto
import Testing

@testable import IssuerdMDES

/// The Customer Service API's requests and answers (Mastercard's "MDES Customer Service API" 2.1.7).
@Suite("MDES Customer Service API: requests, reason codes, answers")
struct CustomerServiceTests {
    static let reference = "DWSPMC00000000010906a349d9ca4eb1a4d53e3c90a11d9c"
    static let audit = try! AuditInfo(userID: "A1435477", userName: "John Smith", organization: "Solid Bank Inc")

    @Test("Paths and root objects of the four operations")
    func paths() {
        #expect(
            CustomerServiceOperation.allCases.map(\.path) == [
                "/token/activate", "/token/suspend", "/token/unsuspend", "/token/delete",
            ])
        #expect(CustomerServiceOperation.suspend.requestRoot == "TokenSuspendRequest")
        #expect(CustomerServiceOperation.unsuspend.responseRoot == "TokenUnsuspendResponse")
        #expect(CustomerServiceOperation.activate.requestRoot == "TokenActivateRequest")
        #expect(CustomerServiceOperation.delete.responseRoot == "TokenDeleteResponse")
    }

    /// The Customer Service API's reason codes per operation, letter by letter: every other letter is
    /// refused.
    @Test(arguments: [
        (CustomerServiceOperation.activate, "AC"), (.suspend, "LSTZ"), (.unsuspend, "FTZ"), (.delete, "LSFTCDZ"),
    ])
    func reasonCodes(operation: CustomerServiceOperation, allowed: String) throws {
        for letter in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" {
            let made = try? CustomerServiceRequest(
                operation, tokenUniqueReference: Self.reference, reasonCode: letter, auditInfo: Self.audit)
            #expect((made != nil) == allowed.contains(letter), "\(operation) \(letter)")
        }
    }

    @Test("The body: one named root object, PascalCase, sorted keys, slashes unescaped, booleans as strings")
    func bodyBytes() throws {
        let suspend = try CustomerServiceRequest(
            .suspend, tokenUniqueReference: Self.reference, reasonCode: "L", commentText: "Lost / found",
            auditInfo: Self.audit)
        #expect(
            String(decoding: try suspend.body(), as: UTF8.self)
                == #"{"TokenSuspendRequest":{"AuditInfo":{"Organization":"Solid Bank Inc","UserId":"A1435477","UserName":"John Smith"},"CommentText":"Lost / found","ReasonCode":"L","TokenUniqueReference":"DWSPMC00000000010906a349d9ca4eb1a4d53e3c90a11d9c"}}"#
        )
        let delete = try CustomerServiceRequest(
            .delete, tokenUniqueReference: Self.reference, reasonCode: "C", deleteFromConsumerApp: false,
            auditInfo: Self.audit)
        #expect(
            String(decoding: try delete.body(), as: UTF8.self)
                == #"{"TokenDeleteRequest":{"AuditInfo":{"Organization":"Solid Bank Inc","UserId":"A1435477","UserName":"John Smith"},"DeleteFromConsumerApp":"false","ReasonCode":"C","TokenUniqueReference":"DWSPMC00000000010906a349d9ca4eb1a4d53e3c90a11d9c"}}"#
        )
    }

    @Test("Fields out of Mastercard's bounds are refused, naming the field and never its value")
    func bounds() {
        for reference in [String(repeating: "D", count: 47), String(repeating: "D", count: 65), Self.reference + " "] {
            #expect(throws: CustomerServiceRequestError.self) {
                try CustomerServiceRequest(
                    .suspend, tokenUniqueReference: reference, reasonCode: "L", auditInfo: Self.audit)
            }
        }
        #expect(throws: CustomerServiceRequestError.self) {
            try CustomerServiceRequest(
                .suspend, tokenUniqueReference: Self.reference, reasonCode: "L",
                commentText: String(repeating: "x", count: 501), auditInfo: Self.audit)
        }
        #expect(throws: CustomerServiceRequestError.self) {
            try CustomerServiceRequest(
                .suspend, tokenUniqueReference: Self.reference, reasonCode: "L", deleteFromConsumerApp: false,
                auditInfo: Self.audit)
        }
        #expect(throws: CustomerServiceRequestError.self) {
            try AuditInfo(userID: "abc", userName: "John Smith", organization: "Bank")
        }
        #expect(throws: CustomerServiceRequestError.self) {
            try AuditInfo(userID: String(repeating: "u", count: 51), userName: "John Smith", organization: "Bank")
        }
        do {
            _ = try AuditInfo(userID: "secret-id", userName: "Jo", organization: "Bank")
            Issue.record("a two-character UserName was accepted")
        } catch {
            #expect("\(error)".contains("UserName") && !"\(error)".contains("Jo,"))
        }
    }

    static func errors(_ entries: String) -> [UInt8] { Array(#"{"Errors":{"Error":[\#(entries)]}}"#.utf8) }
    static let notRecoverable =
        #"{"Source":"TokenUniqueReference","ReasonCode":"INVALID_TOKEN_STATUS","ErrorCode":"E0010039","Description":"Token not suspendable","Recoverable":"false"}"#
    static let recoverable =
        #"{"Source":"System","ReasonCode":"SYSTEM_ERROR","ErrorCode":"E0000001","Description":"Try later","Recoverable":"true"}"#

    @Test("Answers: success, Mastercard's errors with and without Recoverable, bare statuses")
    func answers() {
        let success = Array(
            #"{"TokenSuspendResponse":{"Token":{"TokenUniqueReference":"\#(Self.reference)","CommentId":"ABC123456"}}}"#
                .utf8)
        #expect(
            CustomerServiceOutcome.interpret(.suspend, status: 200, body: success)
                == .accepted(tokenUniqueReference: Self.reference, commentID: "ABC123456"))
        // Another operation's root is not this call's answer.
        guard case .refused(let wrongRoot) = CustomerServiceOutcome.interpret(.delete, status: 200, body: success)
        else {
            Issue.record("a suspend answer accepted a delete")
            return
        }
        #expect(wrongRoot.recoverable)

        guard
            case .refused(let permanent) = CustomerServiceOutcome.interpret(
                .suspend, status: 400, body: Self.errors(Self.notRecoverable))
        else {
            Issue.record("errors accepted")
            return
        }
        #expect(!permanent.recoverable)
        #expect(permanent.errors.first?.reasonCode == "INVALID_TOKEN_STATUS")
        #expect(permanent.errors.first?.errorCode == "E0010039")
        #expect(permanent.errors.first?.source == "TokenUniqueReference")
        #expect(permanent.errors.first?.recoverable == false)
        #expect(
            permanent.description
                == "HTTP 400 INVALID_TOKEN_STATUS (E0010039, source TokenUniqueReference, recoverable false): Token not suspendable"
        )

        // Errors with HTTP 200 are still errors; one non-recoverable error makes the whole answer so.
        guard
            case .refused(let mixed) = CustomerServiceOutcome.interpret(
                .suspend, status: 200, body: Self.errors(Self.recoverable + "," + Self.notRecoverable))
        else {
            Issue.record("errors with 200 accepted")
            return
        }
        #expect(!mixed.recoverable && mixed.errors.count == 2)

        guard
            case .refused(let retry) = CustomerServiceOutcome.interpret(
                .suspend, status: 500, body: Self.errors(Self.recoverable))
        else {
            Issue.record("500 accepted")
            return
        }
        #expect(retry.recoverable)

        // A JSON boolean is taken too; without the flag the status decides.
        let unstated = #"{"Source":"System","ReasonCode":"SYSTEM_ERROR","Description":"x"}"#
        for (status, body, expected) in [
            (503, Self.errors(unstated), true), (400, Self.errors(unstated), false),
            (400, Self.errors(#"{"ReasonCode":"X_ERROR","Recoverable":true}"#), true),
            (503, Array("<html>busy</html>".utf8), true), (429, [], true), (408, [], true),
            (404, [], false), (401, Array("{}".utf8), false),
        ] {
            guard case .refused(let failure) = CustomerServiceOutcome.interpret(.activate, status: status, body: body)
            else {
                Issue.record("\(status) accepted")
                continue
            }
            #expect(failure.recoverable == expected, "\(status)")
        }
    }

    @Test("Error values are cut to their schema lengths and stripped of control characters")
    func boundedErrors() {
        let long = String(repeating: "d", count: 1000)
        let body = Self.errors(
            #"{"Source":"S\u0000\n\#(long)","ReasonCode":"R","Description":"\#(long)","Recoverable":"TRUE"}"#)
        guard case .refused(let failure) = CustomerServiceOutcome.interpret(.suspend, status: 500, body: body),
            let error = failure.errors.first
        else {
            Issue.record("not refused")
            return
        }
        #expect(error.source?.count == 64 && error.source?.hasPrefix("Sddd") == true)
        #expect(error.errorDescription?.count == 256)
        #expect(error.recoverable == true)
    }

    /// A transport that records the request and answers as told.
    final class RecordingTransport: CustomerServiceTransport {
        let answer: (Int, [UInt8])
        let sent = Lock<[(url: String, headers: [(String, String)], body: [UInt8])]>([])
        init(_ status: Int, _ body: String) { answer = (status, Array(body.utf8)) }
        func post(url: String, headers: [(String, String)], body: [UInt8]) throws -> (status: Int, body: [UInt8]) {
            sent.withLock { $0.append((url, headers, body)) }
            return answer
        }
    }

    @Test("The client posts to base + path and signs exactly the bytes it sends (checked by Mastercard's signer)")
    func clientSignsWhatItSends() throws {
        let key = try RSA.Signing.PrivateKey(pemRepresentation: MDESTestKeys.issuerA.privateKeyPEM)
        let transport = RecordingTransport(
            200, #"{"TokenUnsuspendResponse":{"Token":{"TokenUniqueReference":"\#(Self.reference)"}}}"#)
        let client = CustomerServiceClient(
            baseURL: "https://api.mastercard.com/mdes/csapi/v2/",
            signer: MastercardOAuth1Signer(consumerKey: "consumer!key", signingKey: key), transport: transport)
        let request = try CustomerServiceRequest(
            .unsuspend, tokenUniqueReference: Self.reference, reasonCode: "F", auditInfo: Self.audit)
        #expect(try client.send(request) == .accepted(tokenUniqueReference: Self.reference, commentID: nil))
        let sent = try #require(transport.sent.withLock { $0.first })
        #expect(sent.url == "https://api.mastercard.com/mdes/csapi/v2/token/unsuspend")
        #expect(sent.body == (try request.body()))
        let headers = Dictionary(uniqueKeysWithValues: sent.headers)
        #expect(headers["Content-Type"] == "application/json")
        let verdict = try MastercardOracle.call([
            "op": "verify", "url": sent.url, "method": "POST", "body": String(decoding: sent.body, as: UTF8.self),
            "header": try #require(headers["Authorization"]), "publicKeyPEM": key.publicKey.pemRepresentation,
        ])
        #expect(verdict["valid"] as? Bool == true)
        #expect(verdict["bodyHashMatches"] as? Bool == true)
    }
}
