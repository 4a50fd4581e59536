import Foundation

/// One suspend, unsuspend, delete or activate call of the Customer Service API, by token unique
/// reference (MDES Customer Service API).
///
/// The body is `{"Token<Op>Request": {"TokenUniqueReference", "ReasonCode", "CommentText"?,
/// "DeleteFromConsumerApp"?, "AuditInfo"}}`, PascalCase, booleans as the strings `"true"` and
/// `"false"`, encoded once with slashes unescaped: the OAuth body hash is taken over exactly these
/// bytes.
public struct CustomerServiceRequest: Sendable, Equatable {
    public let operation: CustomerServiceOperation
    /// The token's `TokenUniqueReference` (48–64 characters).
    public let tokenUniqueReference: String
    /// One of ``CustomerServiceOperation/allowedReasonCodes``.
    public let reasonCode: Character
    /// `CommentText`, 1–500 characters, shown to Mastercard's customer service.
    public let commentText: String?
    /// `DeleteFromConsumerApp` (delete only): true removes the token from the wallet only, and it
    /// stays active in MDES; issuerd always sends false (delete everywhere).
    public let deleteFromConsumerApp: Bool?
    public let auditInfo: AuditInfo

    /// Validates the fields against Mastercard's schema.
    ///
    /// - Throws: ``CustomerServiceRequestError`` for a reference of the wrong length, a reason code
    ///   the operation does not take, a comment out of bounds, or `deleteFromConsumerApp` on
    ///   another operation than delete.
    public init(
        _ operation: CustomerServiceOperation, tokenUniqueReference: String, reasonCode: Character,
        commentText: String? = nil, deleteFromConsumerApp: Bool? = nil, auditInfo: AuditInfo
    ) throws {
        guard (48...64).contains(tokenUniqueReference.utf8.count),
            tokenUniqueReference.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else {
            throw CustomerServiceRequestError("TokenUniqueReference must be 48 to 64 printable ASCII characters")
        }
        guard operation.allowedReasonCodes.contains(reasonCode) else {
            throw CustomerServiceRequestError("ReasonCode is not one of those \(operation.rawValue) takes")
        }
        if let commentText, !(1...500).contains(commentText.count) {
            throw CustomerServiceRequestError("CommentText must be 1 to 500 characters")
        }
        if deleteFromConsumerApp != nil, operation != .delete {
            throw CustomerServiceRequestError("DeleteFromConsumerApp belongs to delete only")
        }
        self.operation = operation
        self.tokenUniqueReference = tokenUniqueReference
        self.reasonCode = reasonCode
        self.commentText = commentText
        self.deleteFromConsumerApp = deleteFromConsumerApp
        self.auditInfo = auditInfo
    }

    /// The JSON body, the exact bytes to hash, sign and send.
    public func body() throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let fields = Fields(
            tokenUniqueReference: tokenUniqueReference, reasonCode: String(reasonCode), commentText: commentText,
            deleteFromConsumerApp: deleteFromConsumerApp.map { $0 ? "true" : "false" }, auditInfo: auditInfo)
        return Array(try encoder.encode([operation.requestRoot: fields]))
    }

    private struct Fields: Encodable {
        let tokenUniqueReference: String
        let reasonCode: String
        let commentText: String?
        let deleteFromConsumerApp: String?
        let auditInfo: AuditInfo

        enum CodingKeys: String, CodingKey {
            case tokenUniqueReference = "TokenUniqueReference"
            case reasonCode = "ReasonCode"
            case commentText = "CommentText"
            case deleteFromConsumerApp = "DeleteFromConsumerApp"
            case auditInfo = "AuditInfo"
        }
    }
}
