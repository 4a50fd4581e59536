import Foundation
import IssuerdAuth
import IssuerdCore
import IssuerdHTTP

extension AppTokenVerifier {
    /// The customer id of the request's valid app token (`Authorization: Bearer`); 401 with a
    /// `WWW-Authenticate` challenge otherwise.
    package func customerID(for request: HTTPRequest, now: Date) throws -> String {
        do {
            return try customerID(bearer: request.bearerCredential, now: now, logger: request.logger)
        } catch let refusal as Refusal {
            throw HTTPError(refusal)
        }
    }
}
