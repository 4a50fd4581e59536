/// A step-up method, as offered in the authorization's `activationMethods` and chosen by the TSP.
package enum StepUpMethod: String, Sendable, CaseIterable {
    /// Code by text message to the phone on file.
    case sms
    /// Automated voice call (ARS) reading the code to the phone on file.
    case ars
    /// Code by e-mail.
    case email
    /// The issuer app (In-App Verification): no code is sent.
    case app

    /// The method of an `activationMethodId` such as `sms-1` or `email-1` (the id the TSP
    /// authorization answer offers: `<method>-<n>`); nil for anything else.
    package init?(methodID: String) {
        guard methodID.utf8.count <= 32 else { return nil }
        let parts = methodID.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard let method = StepUpMethod(rawValue: String(parts[0])) else { return nil }
        if parts.count == 2 {
            guard !parts[1].isEmpty, parts[1].utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        }
        self = method
    }

    /// Whether a one-time code is generated and delivered for this method.
    package var sendsCode: Bool { self != .app }
}
