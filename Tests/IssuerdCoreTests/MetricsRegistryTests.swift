import Dispatch
import IssuerdCore
import Testing

@Suite("Prometheus exposition")
struct MetricsRegistryTests {
    @Test("Counters, gauges and histograms render in text format 0.0.4")
    func render() {
        let registry = MetricsRegistry()
        let requests = registry.counter("issuerd_requests_total", help: "Requests.", labels: ["route", "status"])
        requests.increment(labels: ["/v1/cards", "200"])
        requests.increment(by: 2, labels: ["/v1/cards", "200"])
        requests.increment(labels: ["/v1/x\"y", "404"])
        let latency = registry.histogram(
            "issuerd_latency_seconds", help: "Latency.", labels: ["route"], buckets: [0.1, 1])
        latency.observe(0.05, labels: ["a"])
        latency.observe(0.5, labels: ["a"])
        latency.observe(5, labels: ["a"])
        registry.gauge("issuerd_pool", help: "Pool.", labels: ["state"]) { [(["idle"], 3), (["in_use"], 1)] }
        let text = registry.render()
        #expect(text.contains("# TYPE issuerd_requests_total counter\n"))
        #expect(text.contains("issuerd_requests_total{route=\"/v1/cards\",status=\"200\"} 3\n"))
        #expect(text.contains("issuerd_requests_total{route=\"/v1/x\\\"y\",status=\"404\"} 1\n"))
        #expect(text.contains("issuerd_latency_seconds_bucket{route=\"a\",le=\"0.1\"} 1\n"))
        #expect(text.contains("issuerd_latency_seconds_bucket{route=\"a\",le=\"1\"} 2\n"))
        #expect(text.contains("issuerd_latency_seconds_bucket{route=\"a\",le=\"+Inf\"} 3\n"))
        #expect(text.contains("issuerd_latency_seconds_sum{route=\"a\"} 5.55\n"))
        #expect(text.contains("issuerd_latency_seconds_count{route=\"a\"} 3\n"))
        #expect(text.contains("issuerd_pool{state=\"in_use\"} 1\n"))
        #expect(registry.value(of: "issuerd_requests_total", labels: ["/v1/cards", "200"]) == 3)
    }

    @Test("Samples recorded on many threads at once add up in the scrape")
    func concurrentRecording() {
        let registry = MetricsRegistry()
        let decisions = registry.counter("issuerd_decisions_total", help: "Decisions.", labels: ["flow"])
        let latency = registry.histogram(
            "issuerd_latency_seconds", help: "Latency.", labels: ["route"], buckets: [0.01, 1])
        let level = registry.gauge("issuerd_level", help: "Level.")
        let threads = 12
        let perThread = 5_000
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for index in 0..<perThread {
                decisions.increment(labels: [index % 2 == 0 ? "green" : "yellow"])
                latency.observe(index % 4 == 0 ? 0.5 : 0.005, labels: ["p"])
                level.set(Double(thread), labels: [])
            }
        }
        #expect(registry.value(of: "issuerd_decisions_total", labels: ["green"]) == Double(threads * perThread / 2))
        #expect(registry.value(of: "issuerd_decisions_total", labels: ["yellow"]) == Double(threads * perThread / 2))
        let text = registry.render()
        #expect(
            text.contains("issuerd_latency_seconds_bucket{route=\"p\",le=\"0.01\"} \(threads * perThread * 3 / 4)\n"))
        #expect(text.contains("issuerd_latency_seconds_bucket{route=\"p\",le=\"+Inf\"} \(threads * perThread)\n"))
        #expect(text.contains("issuerd_latency_seconds_count{route=\"p\"} \(threads * perThread)\n"))
        // One gauge sample, whichever thread set it last.
        let gaugeLines = text.split(separator: "\n").filter { $0.hasPrefix("issuerd_level ") }
        #expect(gaugeLines.count == 1)
        #expect((0..<threads).map { "issuerd_level \($0)" }.contains(gaugeLines.first.map(String.init) ?? ""))
    }

    @Test("Registering a family again hands out the same samples")
    func reregistering() {
        let registry = MetricsRegistry()
        registry.counter("issuerd_x_total", help: "X.").increment(by: 2)
        registry.counter("issuerd_x_total", help: "X.").increment()
        #expect(registry.value(of: "issuerd_x_total") == 3)
        #expect(registry.render().components(separatedBy: "# TYPE issuerd_x_total counter").count == 2)
    }
}
