import Foundation
import IssuerdCore
import IssuerdHTTP
import IssuerdMDES
import IssuerdPostgres
import IssuerdRisk
import IssuerdStorage
import IssuerdWire

/// One MDES operation inside ``MDESIssuerServices``'s transaction (its answer is stored with it).
struct MDESFlows {
    let services: MDESIssuerServices
    let connection: PostgresConnection
    let now: Date
    let logger: Logger
    var context: ServiceContext { services.context }

    typealias Answer = MDESIssuerServices.Answer

    func run(_ operation: MDESOperation, body: Data, responseId: String) throws -> Answer {
        switch operation {
        case .authorizeService:
            let request = try MDESMessageDecoder.decode(MDESAuthorizeServiceRequest.self, from: body)
            try request.validate()
            return try authorize(request, responseId: responseId)
        case .requestActivationMethods:
            let request = try MDESMessageDecoder.decode(MDESRequestActivationMethodsRequest.self, from: body)
            try request.validate()
            return .ok(try activationMethods(request, responseId: responseId))
        case .notifyServiceActivated:
            let request = try MDESMessageDecoder.decode(MDESNotifyServiceActivatedRequest.self, from: body)
            try request.validate()
            try serviceActivated(request)
        case .notifyTokenUpdated:
            let request = try MDESMessageDecoder.decode(MDESNotifyTokenUpdatedRequest.self, from: body)
            try request.validate()
            try tokenUpdated(request)
        case .notifySuspiciousEvents:
            let request = try MDESMessageDecoder.decode(MDESNotifySuspiciousEventsRequest.self, from: body)
            try request.validate()
            try suspiciousEvents(request, body: body)
        case .deliverActivationCode:
            let request = try MDESMessageDecoder.decode(MDESDeliverActivationCodeRequest.self, from: body)
            try request.validate()
            try deliverCode(request)
        case .validateActivationCode:
            let request = try MDESMessageDecoder.decode(MDESValidateActivationCodeRequest.self, from: body)
            try request.validate()
            return .ok(MDESValidateActivationCodeResponse(responseId: responseId, result: try validateCode(request)))
        }
        return .ok(MDESAcknowledgement(responseId: responseId))
    }

    /// The card data of a request's `encryptedPayload`, opened and checked.
    func cardData(_ info: MDESFundingAccountInfo) throws -> MDESCardData {
        try services.open(info.encryptedPayload, as: MDESFundingAccountData.self, now: now, logger: logger)
            .checkedCard()
    }

    /// The same with its token (Notify Service Activated).
    func tokenizedCardData(_ info: MDESFundingAccountInfo) throws -> MDESTokenizedCardData {
        try services.open(info.encryptedPayload, as: MDESFundingAccountData.self, now: now, logger: logger)
            .checkedCardAndToken()
    }

    /// The step-up methods as MDES activation methods (SMS, e-mail, ARS, the issuer app), masked.
    static func activationMethods(customer: CustomerRecord?, allowed: StepUpMethods) -> [MDESActivationMethod] {
        TokenizationAuthorization.activationMethods(customer: customer, allowed: allowed).compactMap { method in
            MDESActivationMethodType(stepUpMethod: method.type).map {
                MDESActivationMethod(type: $0, value: String(method.value.prefix(64)))
            }
        }
    }

    // MARK: Request Activation Methods

    /// The methods of the token's pending step-up: those its attempt allowed that the customer
    /// can receive; `[]` when the card data does not verify or no token awaits verification.
    func activationMethods(
        _ request: MDESRequestActivationMethodsRequest, responseId: String
    ) throws -> MDESRequestActivationMethodsResponse {
        let data = try cardData(request.fundingAccountInfo)
        let none = MDESRequestActivationMethodsResponse(responseId: responseId, activationMethods: [])
        guard let tokenReference = request.fundingAccountInfo.tokenUniqueReference,
            let pan = PrimaryAccountNumber(data.account.accountNumber),
            let token = try StepUpToken.lock(tokenReference, connection: connection),
            token.status == StepUpToken.awaitingVerification,
            let card = try CardStore.expirationAndFingerprint(token.cardID, connection: connection),
            card.fingerprint == (try context.vault.fingerprint(pan))
        else { return none }
        if let month = data.account.expiryMonth, let year = data.account.expiryYear,
            card.expiration != "\(month)/\(year)"
        {
            return none
        }
        let customer = try CustomerStore.find(token.customerID, connection: connection)
        let allowed = StepUpMethods(names: token.allowedMethods ?? [])
        return MDESRequestActivationMethodsResponse(
            responseId: responseId, activationMethods: Self.activationMethods(customer: customer, allowed: allowed))
    }
}

extension MDESDecision {
    /// The answer to an attempt's decision (a tokenization is never refused for its certificate chain).
    init(_ decision: AttemptDecision) {
        switch decision {
        case .approved: self = .approved
        case .requireAdditionalAuthentication: self = .requireAdditionalAuthentication
        case .declined, .certificateChainInvalid: self = .declined
        }
    }
}
