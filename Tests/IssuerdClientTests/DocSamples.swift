// The Linux-compilable samples of docs/ios-integration.md, compiled (and run by
// DocSamplesTests) so that they cannot rot. Each function names its section; keep the code
// here and in the document identical. The PassKit parts of the document cannot compile on
// Linux and live in Sources/IssuerdClient/PassKit instead.
import Foundation
import IssuerdClient

/// Stands in for the app's own sign-in session in the samples.
protocol SignInSession: Sendable {
    /// A bearer token for issuerd, refreshed if needed.
    func accessToken() async throws -> String
}

enum DocSamples {
    // MARK: §2 Create one client

    static func makeClient(session: any SignInSession, baseURL: URL) -> IssuerdClient {
        IssuerdClient(
            baseURL: baseURL,  // e.g. https://issuer.example/
            timeBudget: .seconds(15),  // the default; PassKit allows 20 s in total
            tokenProvider: { try await session.accessToken() }
        )
    }

    // MARK: §3 List the cards and decide where to show the button

    static func cardsToOffer(client: IssuerdClient) async throws -> [CardSummary] {
        try await client.cards().filter { $0.walletEligible && $0.status == "active" }
    }

    // MARK: §4 Ask for the pass data inside PassKit's window

    /// What the app does after asking issuerd, independent of PassKit.
    enum AddCardOutcome: Sendable, Equatable {
        case approved(ApprovedPassData)
        case declined(attemptId: String)
        case failed(message: String, signInAgain: Bool)
    }

    static func passData(
        client: IssuerdClient, cardId: String, certificates: [Data], nonce: Data, nonceSignature: Data
    ) async -> AddCardOutcome {
        do {
            switch try await client.provisioningData(
                cardId: cardId, certificates: certificates, nonce: nonce, nonceSignature: nonceSignature)
            {
            case .approved(let passData):
                return .approved(passData)
            case .declined(let attemptId, _):
                // Do not show the reasons to the user: they describe fraud rules.
                return .declined(attemptId: attemptId)
            }
        } catch let error as IssuerdClientError {
            switch error.code {
            case .unauthenticated:
                return .failed(message: "Please sign in again.", signInAgain: true)
            case .timedOut, .transport, .throttled, .server:
                return .failed(message: "Apple Wallet is not available right now. Try again later.", signInAgain: false)
            default:
                return .failed(
                    message: "This card cannot be added (\(error.requestId ?? "no request id")).", signInAgain: false)
            }
        } catch {
            // The token provider's own error: the app's session could not produce a token.
            return .failed(message: "Please sign in again.", signInAgain: true)
        }
    }

    // MARK: §6 In-App Verification from the Wallet deep link

    static func activationData(client: IssuerdClient, launchURL: URL) async throws -> (WalletDeepLink, Data)? {
        let link: WalletDeepLink
        do {
            link = try WalletDeepLink(url: launchURL)
        } catch {
            return nil  // Not a Wallet verification link: route it elsewhere.
        }
        // Authenticate the user (Face ID, PIN) before this line.
        let activationData = try await client.verify(link: link)
        return (link, activationData)
    }
}
