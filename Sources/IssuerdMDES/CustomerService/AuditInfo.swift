/// Who, at the issuer, makes a Customer Service API call (`AuditInfo`, required in every
/// request; MDES Customer Service API). MDES records it but does not validate it.
public struct AuditInfo: Sendable, Equatable, Codable {
    /// `UserId`, 4–50 characters: the operator's id in the issuer's systems.
    public let userID: String
    /// `UserName`, 4–200 characters.
    public let userName: String
    /// `Organization`, 4–200 characters: the issuer's or processor's name.
    public let organization: String

    /// Validates the lengths Mastercard's schema fixes.
    ///
    /// - Throws: ``CustomerServiceRequestError`` naming the field out of bounds.
    public init(userID: String, userName: String, organization: String) throws {
        for (name, value, range) in [
            ("UserId", userID, 4...50), ("UserName", userName, 4...200), ("Organization", organization, 4...200),
        ] where !range.contains(value.count) || value.contains(where: { $0.isNewline }) {
            throw CustomerServiceRequestError(
                "AuditInfo.\(name) must be \(range.lowerBound) to \(range.upperBound) characters on one line")
        }
        self.userID = userID
        self.userName = userName
        self.organization = organization
    }

    enum CodingKeys: String, CodingKey {
        case userID = "UserId"
        case userName = "UserName"
        case organization = "Organization"
    }
}

/// A Customer Service API request that cannot be built: the text names the field, never a value.
public struct CustomerServiceRequestError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String
    package init(_ description: String) { self.description = description }
}
