import Foundation
import IssuerdAuth
import IssuerdCore
import IssuerdHTTP

extension AppTokenVerifier {
    /// The customer id of the request's valid app token (`Authorization: Bearer`); 401 with a
    /// `WWW-Authenticate` challenge otherwise. A token the head's admission verified
    /// (``ServiceContext/admission(for:)``) is not verified again: its ``AppTokenPrincipal``
    /// travels with the request (``HTTPRequest/admitted``).
    package func customerID(for request: HTTPRequest, now: Date) throws -> String {
        if let principal = request.admitted as? AppTokenPrincipal { return principal.customerID }
        return try principal(for: request, now: now).customerID
    }

    /// The verified principal of the request's app token, for the route's admission on the head.
    ///
    /// - Throws: 401 as ``customerID(for:now:)``.
    func principal(for request: HTTPRequest, now: Date) throws -> AppTokenPrincipal {
        do {
            return AppTokenPrincipal(
                customerID: try customerID(bearer: request.bearerCredential, now: now, logger: request.logger))
        } catch let refusal as Refusal {
            throw HTTPError(refusal)
        }
    }
}

/// A customer whose app token ``AppTokenVerifier`` verified; only this file makes one, so a
/// handler that finds one in ``HTTPRequest/admitted`` need not verify the token again.
struct AppTokenPrincipal: Sendable {
    /// The token's subject.
    let customerID: String

    fileprivate init(customerID: String) { self.customerID = customerID }
}
