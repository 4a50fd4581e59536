import Foundation
import IssuerdPostgres

/// A round's messages split into lanes that the dispatcher delivers side by side.
///
/// Two messages share a lane when their payloads name a common card, token, reissue or step-up
/// challenge, directly or through a third message of the round. A lane keeps the claim order, so
/// the calls about one card or token still go one after the other, each waiting for the answer to
/// the one before, as with one dispatcher delivering in turn; only messages about different cards
/// and tokens go at the same time. A payload that names nothing (or does not decode) is a lane of
/// its own.
package enum OutboxLanes {
    /// The fields of every kind's payload that say what a message is about.
    private struct Names: Decodable {
        var cardId: String?
        var previousCardId: String?
        var reissueId: String?
        var tokenReference: String?
        var tokenReferences: [String]?
        var resumeTokens: [String]?
        var challengeId: String?
    }

    /// What `message` is about: its card, token, reissue and challenge names, each prefixed by its
    /// sort so that a card id never meets a token reference of the same spelling.
    package static func names(_ message: OutboxStore.Claimed) -> [String] {
        guard let names = try? message.payload.decode(Names.self) else { return [] }
        var all: [String] = []
        for card in [names.cardId, names.previousCardId].compactMap({ $0 }) { all.append("card:" + card) }
        let tokens =
            [names.tokenReference].compactMap { $0 } + (names.tokenReferences ?? []) + (names.resumeTokens ?? [])
        for token in tokens { all.append("token:" + token) }
        if let reissue = names.reissueId { all.append("reissue:" + reissue) }
        if let challenge = names.challengeId { all.append("challenge:" + challenge) }
        return all
    }

    /// `messages` (in claim order) as lanes: each lane in claim order, the lanes in the order of
    /// their first message.
    package static func split(_ messages: [OutboxStore.Claimed]) -> [[OutboxStore.Claimed]] {
        // Union-find over the messages' positions: the first message naming a thing owns it, and
        // every later one naming it joins that message's set.
        var parent = Array(messages.indices)
        func root(_ index: Int) -> Int {
            var index = index
            while parent[index] != index {
                parent[index] = parent[parent[index]]
                index = parent[index]
            }
            return index
        }
        var owner: [String: Int] = [:]
        for (index, message) in messages.enumerated() {
            for name in names(message) {
                guard let other = owner[name] else {
                    owner[name] = index
                    continue
                }
                let (a, b) = (root(index), root(other))
                if a != b { parent[max(a, b)] = min(a, b) }
            }
        }
        var laneOfRoot: [Int: Int] = [:]
        var lanes: [[OutboxStore.Claimed]] = []
        for (index, message) in messages.enumerated() {
            let top = root(index)
            if let lane = laneOfRoot[top] {
                lanes[lane].append(message)
            } else {
                laneOfRoot[top] = lanes.count
                lanes.append([message])
            }
        }
        return lanes
    }
}
