import Foundation

extension Backtest {
    /// An attempt's current outcome as a backtest counts it: confirmed fraud (with the amount
    /// lost) or legitimate. Attempts without one are not labelled.
    public struct Label: Sendable, Equatable {
        public var fraud: Bool
        /// Minor units lost (fraud only).
        public var amountLost: Int64

        /// Creates the value from every stored property.
        public init(fraud: Bool, amountLost: Int64 = 0) {
            self.fraud = fraud
            self.amountLost = amountLost
        }
    }

    /// An attempt of a batch with its outcome: its index in the batch's order, and the label.
    public struct Labelled: Sendable, Equatable {
        public var index: Int
        public var label: Label

        /// Creates the value from every stored property.
        public init(index: Int, label: Label) {
            self.index = index
            self.label = label
        }
    }

    /// The labelled attempts' figures under one ruleset: per rule what it decided, and the totals,
    /// as rule performance counts them live ("decided": a hit at least as severe as the flow,
    /// which is not green).
    public struct SidePerformance: Sendable, Equatable {
        /// One rule's (or check's) labelled decisions.
        public struct Rule: Sendable, Equatable {
            public var ruleID: String
            public var mode: RuleMode
            public var fraud = 0
            public var legitimate = 0
            public var fraudAmount: Int64 = 0

            /// fraud / (fraud + legitimate); nil when none is labelled.
            public var precision: Double? {
                fraud + legitimate == 0 ? nil : Double(fraud) / Double(fraud + legitimate)
            }
        }

        /// By `"<mode> <rule id>"`.
        public var rules: [String: Rule] = [:]
        public var fraud = 0
        public var legitimate = 0
        public var fraudPassedGreen = 0
        public var fraudPassedGreenAmount: Int64 = 0
        /// Legitimate attempts sent to a step-up, and declined.
        public var legitimateSteppedUp = 0
        public var legitimateDeclined = 0

        /// Counts one labelled decision.
        mutating func add(_ decision: RiskDecision, _ label: Label) {
            if label.fraud { fraud += 1 } else { legitimate += 1 }
            if decision.flow == .green {
                if label.fraud {
                    fraudPassedGreen += 1
                    fraudPassedGreenAmount += label.amountLost
                }
                return
            }
            if !label.fraud {
                if decision.flow == .yellow { legitimateSteppedUp += 1 } else { legitimateDeclined += 1 }
            }
            for hit in decision.hits where hit.outcome >= decision.flow {
                let key = "\(hit.mode.rawValue) \(hit.ruleID)"
                var rule = rules[key] ?? Rule(ruleID: hit.ruleID, mode: hit.mode)
                if label.fraud {
                    rule.fraud += 1
                    rule.fraudAmount += label.amountLost
                } else {
                    rule.legitimate += 1
                }
                rules[key] = rule
            }
        }

        /// Adds another slice's counts.
        mutating func merge(_ other: SidePerformance) {
            for (key, rule) in other.rules {
                var merged = rules[key] ?? Rule(ruleID: rule.ruleID, mode: rule.mode)
                merged.fraud += rule.fraud
                merged.legitimate += rule.legitimate
                merged.fraudAmount += rule.fraudAmount
                rules[key] = merged
            }
            fraud += other.fraud
            legitimate += other.legitimate
            fraudPassedGreen += other.fraudPassedGreen
            fraudPassedGreenAmount += other.fraudPassedGreenAmount
            legitimateSteppedUp += other.legitimateSteppedUp
            legitimateDeclined += other.legitimateDeclined
        }

        /// A rule's share of all confirmed fraud; nil without fraud.
        public func recall(_ rule: Rule) -> Double? { fraud == 0 ? nil : Double(rule.fraud) / Double(fraud) }
    }

    /// Serving against candidate over the labelled attempts of a backtest.
    public struct Performance: Sendable, Equatable {
        public var current = SidePerformance()
        public var candidate = SidePerformance()
        /// Confirmed fraud serving let through green that the candidate stops, and its amount.
        public var caughtMore = 0
        public var caughtMoreAmount: Int64 = 0
        /// Confirmed fraud serving stopped that the candidate lets through green, and its amount.
        public var letThrough = 0
        public var letThroughAmount: Int64 = 0
        /// Legitimate attempts the candidate sends to a step-up that serving approved green.
        public var legitimateStepUpsAdded = 0
        /// Legitimate attempts serving stepped up that the candidate approves green.
        public var legitimateStepUpsRemoved = 0
        /// Legitimate attempts the candidate declines that serving did not.
        public var legitimateDeclinesAdded = 0

        public init() {}

        /// Counts one labelled attempt's two decisions.
        mutating func add(before: RiskDecision, after: RiskDecision, label: Label) {
            current.add(before, label)
            candidate.add(after, label)
            if label.fraud {
                if before.flow == .green, after.flow != .green {
                    caughtMore += 1
                    caughtMoreAmount += label.amountLost
                }
                if before.flow != .green, after.flow == .green {
                    letThrough += 1
                    letThroughAmount += label.amountLost
                }
            } else {
                if before.flow == .green, after.flow == .yellow { legitimateStepUpsAdded += 1 }
                if before.flow == .yellow, after.flow == .green { legitimateStepUpsRemoved += 1 }
                if before.flow != .orange, after.flow == .orange { legitimateDeclinesAdded += 1 }
            }
        }

        /// Adds another slice's counts.
        mutating func merge(_ other: Performance) {
            current.merge(other.current)
            candidate.merge(other.candidate)
            caughtMore += other.caughtMore
            caughtMoreAmount += other.caughtMoreAmount
            letThrough += other.letThrough
            letThroughAmount += other.letThroughAmount
            legitimateStepUpsAdded += other.legitimateStepUpsAdded
            legitimateStepUpsRemoved += other.legitimateStepUpsRemoved
            legitimateDeclinesAdded += other.legitimateDeclinesAdded
        }

        /// One sentence: "catches 14 more confirmed frauds (₩3.2M), adds 210 step-ups to
        /// legitimate customers, lets 3 fraud through that serving stopped".
        public var summary: String {
            var parts = [
                "catches \(caughtMore) more confirmed fraud\(caughtMore == 1 ? "" : "s") (\(Backtest.won(caughtMoreAmount)))",
                "adds \(legitimateStepUpsAdded) step-up\(legitimateStepUpsAdded == 1 ? "" : "s") to legitimate customers",
            ]
            if legitimateDeclinesAdded > 0 {
                parts.append(
                    "declines \(legitimateDeclinesAdded) more legitimate customer\(legitimateDeclinesAdded == 1 ? "" : "s")"
                )
            }
            if legitimateStepUpsRemoved > 0 {
                parts.append(
                    "spares \(legitimateStepUpsRemoved) legitimate customer\(legitimateStepUpsRemoved == 1 ? "" : "s") a step-up"
                )
            }
            parts.append("lets \(letThrough) fraud through that serving stopped (\(Backtest.won(letThroughAmount)))")
            return parts.joined(separator: ", ")
        }
    }

    /// An amount in won as analysts read it: `₩3.2M`, `₩350K`, `₩900`.
    public static func won(_ amount: Int64) -> String {
        let value = Double(amount)
        if amount >= 1_000_000 { return "₩" + String(format: "%.1fM", value / 1_000_000) }
        if amount >= 10_000 { return "₩" + String(format: "%.0fK", value / 1_000) }
        return "₩\(amount)"
    }
}
