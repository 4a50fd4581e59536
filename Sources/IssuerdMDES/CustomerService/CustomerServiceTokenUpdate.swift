import Foundation

/// The new account data of a reissued card, the plaintext of a `/token/update` call's
/// `EncryptedAccountInformation` (MDES Customer Service API, `UpdateAccountData`):
/// `{"CurrentAccount"?: {"AccountPan"}, "NewAccount": {"AccountPan"?, "ExpirationDate": "MMYY",
/// "AccountPanSequenceNumber"?}}`. The sequence number sits inside `NewAccount`, as the schema
/// has it. The same plaintext, encrypted the same way, is what a TSP's `pan_lifecycle`
/// notification carries.
public struct AccountUpdateData: Encodable, Sendable {
    /// The PAN whose tokens move (absent when the call names one token).
    public var currentAccountPAN: String?
    /// The new PAN; absent when the PAN is kept (only the expiry changes).
    public var newAccountPAN: String?
    /// `MMYY`.
    public var expirationDate: String
    /// 2–3 digits, when the issuer gives one.
    public var sequenceNumber: String?

    /// Creates the value from every stored property.
    public init(currentAccountPAN: String?, newAccountPAN: String?, expirationDate: String, sequenceNumber: String?) {
        self.currentAccountPAN = currentAccountPAN
        self.newAccountPAN = newAccountPAN
        self.expirationDate = expirationDate
        self.sequenceNumber = sequenceNumber
    }

    private enum Keys: String, CodingKey {
        case currentAccount = "CurrentAccount"
        case newAccount = "NewAccount"
        case accountPan = "AccountPan"
        case expirationDate = "ExpirationDate"
        case sequenceNumber = "AccountPanSequenceNumber"
    }

    public func encode(to encoder: any Encoder) throws {
        var root = encoder.container(keyedBy: Keys.self)
        if let currentAccountPAN {
            var current = root.nestedContainer(keyedBy: Keys.self, forKey: .currentAccount)
            try current.encode(currentAccountPAN, forKey: .accountPan)
        }
        var new = root.nestedContainer(keyedBy: Keys.self, forKey: .newAccount)
        try new.encodeIfPresent(newAccountPAN, forKey: .accountPan)
        try new.encode(expirationDate, forKey: .expirationDate)
        try new.encodeIfPresent(sequenceNumber, forKey: .sequenceNumber)
    }
}

/// One `POST {base}/token/update` call by Account PAN (MDES Customer Service API 2.1.7,
/// `TokenUpdateRequest`): the new account data field-level encrypted to Mastercard's key (the PAN
/// to move is inside it), `UpdateWalletProviderIndicator` (`"0"` passes the new last four digits
/// to the wallet; Mastercard's default is `"1"`), a comment and `AuditInfo`. There is no
/// `ReasonCode`.
public struct CustomerServiceTokenUpdate: Sendable, Equatable {
    /// The path after the `/v2` base.
    public static let path = "/token/update"

    public let encryptedAccountInformation: EncryptedPayload
    public let notifyWallet: Bool
    public let commentText: String
    public let auditInfo: AuditInfo

    /// Checks the comment's bounds.
    ///
    /// - Throws: ``CustomerServiceRequestError`` for a comment out of 1–500 characters.
    public init(
        encryptedAccountInformation: EncryptedPayload, notifyWallet: Bool, commentText: String, auditInfo: AuditInfo
    ) throws {
        guard (1...500).contains(commentText.count) else {
            throw CustomerServiceRequestError("CommentText must be 1 to 500 characters")
        }
        self.encryptedAccountInformation = encryptedAccountInformation
        self.notifyWallet = notifyWallet
        self.commentText = commentText
        self.auditInfo = auditInfo
    }

    /// `{"TokenUpdateRequest": {...}}`, PascalCase, encoded once (the OAuth body hash covers it).
    public func body() throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let payload = encryptedAccountInformation
        var encrypted = [
            "EncryptedData": payload.encryptedData, "EncryptedKey": payload.encryptedKey,
            "PublicKeyFingerprint": payload.publicKeyFingerprint,
        ]
        encrypted["OaepHashingAlgorithm"] = payload.oaepHashingAlgorithm
        encrypted["Iv"] = payload.iv
        return Array(
            try encoder.encode([
                "TokenUpdateRequest": Fields(
                    encryptedAccountInformation: encrypted, updateWalletProviderIndicator: notifyWallet ? "0" : "1",
                    commentText: commentText, auditInfo: auditInfo)
            ]))
    }

    private struct Fields: Encodable {
        let encryptedAccountInformation: [String: String]
        let updateWalletProviderIndicator: String
        let commentText: String
        let auditInfo: AuditInfo

        enum CodingKeys: String, CodingKey {
            case encryptedAccountInformation = "EncryptedAccountInformation"
            case updateWalletProviderIndicator = "UpdateWalletProviderIndicator"
            case commentText = "CommentText"
            case auditInfo = "AuditInfo"
        }
    }
}
