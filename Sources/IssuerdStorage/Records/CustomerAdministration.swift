import Foundation
import IssuerdCore
import IssuerdPostgres
import IssuerdWire

/// `POST /v1/admin/customers` without the HTTP: validation, the upsert and its audit entry, shared
/// by the route and `issuerd cards import`.
package enum CustomerAdministration {
    /// Checks every field of the request and builds the record to store.
    ///
    /// - Throws: 400 `invalid_request` naming the first bad field.
    package static func validate(_ request: CustomerUpsertRequest) throws -> CustomerRecord {
        CustomerRecord(
            customerID: try AdminValidation.identifier(request.customerId, field: "customerId"),
            phoneNumber: try request.phoneNumber.map(AdminValidation.phoneNumber),
            email: try request.email.map(AdminValidation.email),
            phoneChangedAt: try request.phoneChangedAt.map {
                try AdminValidation.timestamp($0, field: "phoneChangedAt")
            },
            emailChangedAt: try request.emailChangedAt.map {
                try AdminValidation.timestamp($0, field: "emailChangedAt")
            },
            addressChangedAt: try request.addressChangedAt.map {
                try AdminValidation.timestamp($0, field: "addressChangedAt")
            },
            createdAt: Date(timeIntervalSince1970: 0))
    }

    /// Upserts within the caller's transaction and appends the audit entry there.
    ///
    /// The audit details say which contact fields were given, never their values: the audit log
    /// is read by more people than the customer table.
    /// - Returns: The stored record and whether it was created.
    package static func upsert(
        _ record: CustomerRecord, actor: String, now: Date, connection: PostgresConnection
    ) throws -> (CustomerRecord, created: Bool) {
        let (stored, created) = try CustomerStore.upsert(record, now: now, connection: connection)
        var given: [String] = []
        if record.phoneNumber != nil { given.append("phoneNumber") }
        if record.email != nil { given.append("email") }
        if record.phoneChangedAt != nil { given.append("phoneChangedAt") }
        if record.emailChangedAt != nil { given.append("emailChangedAt") }
        if record.addressChangedAt != nil { given.append("addressChangedAt") }
        try AuditLog.append(
            actor: actor, action: created ? "customer.created" : "customer.updated",
            subject: "customer:\(stored.customerID)",
            details: ["fields": given.joined(separator: ",")], at: now, connection: connection)
        return (stored, created)
    }

    /// The answer: the stored customer with its destinations masked.
    package static func view(_ record: CustomerRecord, created: Bool) -> CustomerView {
        CustomerView(
            customerId: record.customerID, created: created,
            phoneNumber: record.phoneNumber.map(DestinationMask.phone), email: record.email.map(DestinationMask.email),
            phoneChangedAt: record.phoneChangedAt.map(Self.iso8601),
            emailChangedAt: record.emailChangedAt.map(Self.iso8601),
            addressChangedAt: record.addressChangedAt.map(Self.iso8601))
    }

    package static func iso8601(_ date: Date) -> String { date.formatted(.iso8601) }
}

/// The body of `POST /v1/admin/customers` answers (`CustomerUpsertResponse` in the OpenAPI
/// document): never a full phone number or e-mail address.
package struct CustomerView: Codable, Sendable, Equatable {
    package var customerId: String
    package var created: Bool
    package var phoneNumber: String?
    package var email: String?
    package var phoneChangedAt: String?
    package var emailChangedAt: String?
    package var addressChangedAt: String?
}
