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
        let latency = registry.histogram("issuerd_latency_seconds", help: "Latency.", labels: ["route"], buckets: [0.1, 1])
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
}
