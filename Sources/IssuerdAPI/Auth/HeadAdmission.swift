import IssuerdAuth
import IssuerdHTTP

extension ServiceContext {
    /// The credential a route's callers must show on a request's head before its body is read
    /// (``Router/Admission``), by caller group (docs/openapi.yaml's tags; the path prefixes deploy/nginx.conf
    /// also routes apart). A request with a body that lacks it is answered 401 and its body
    /// discarded as it arrives, never kept; the handlers still check every credential in full.
    ///
    /// - `/v1/cards`, `/v1/wallet/`: the issuer app's JWT, verified in full (it needs no body).
    /// - `/v1/tsp/`: `X-Issuerd-Signature` well formed and within its time window; its HMAC
    ///   covers the body, so it is checked once the body is in. The activation-code check also
    ///   takes an IVR system's API key instead.
    /// - `/v1/admin/`: an API key's form, or the console's session cookie (both looked up in
    ///   PostgreSQL by the handler).
    /// - `/mdes/`: a trusted proxy's `X-Client-Verify: SUCCESS` (``MDESIssuerServices/admit(_:proxies:)``).
    func admission(for pattern: String) -> Router.Admission? {
        let (appTokens, tsp, apiKeys, clock) = (self.appTokens, self.tsp, self.apiKeys, self.clock)
        if pattern.hasPrefix("/v1/cards") || pattern.hasPrefix("/v1/wallet/") {
            // Verified in full: the handler takes the customer from it instead of verifying again.
            return { try appTokens.principal(for: $0, now: clock()) }
        }
        if pattern == "/v1/tsp/activation-codes/verify" {
            return { request in
                if request.headers[TSPAuthenticator.headerName] != nil {
                    try tsp.admit(request, now: clock())
                } else {
                    try apiKeys.admit(request)
                }
                return nil
            }
        }
        if pattern.hasPrefix("/v1/tsp/") {
            return {
                try tsp.admit($0, now: clock())
                return nil
            }
        }
        if pattern.hasPrefix("/v1/admin/") {
            return {
                try apiKeys.admit($0)
                return nil
            }
        }
        if pattern.hasPrefix("/mdes/"), let proxies = configuration.mdes?.trustedProxies {
            return {
                try MDESIssuerServices.admit($0, proxies: proxies)
                return nil
            }
        }
        return nil
    }
}
