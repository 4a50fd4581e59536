import Testing

@testable import IssuerdRisk

/// How a value a rule read is shown (decision values, explanations, the console).
struct RiskValueTextTests {
    static let durations: [(seconds: Double, shown: String)] = [
        (0.018887877464294434, "0s"), (3 * 86_400 + 4 * 3_600 + 5, "3d 4h"), (12 * 60 + 5.5, "12m 5s"),
        (100_000, "1d 3h"), (86_400 + 59, "1d"), (24 * 3_600, "24h"), (14 * 86_400, "14d"), (90 * 60, "90m"),
        (45, "45s"), (-90.5, "-1m 30s"),
    ]

    @Test("A measured duration reads as days, hours, minutes and seconds, never a fraction of a second")
    func duration() {
        for (seconds, shown) in Self.durations {
            #expect(RiskValue.duration(seconds).description == shown, "\(seconds)")
        }
    }
}
