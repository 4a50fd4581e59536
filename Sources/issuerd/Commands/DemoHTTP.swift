import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A small synchronous JSON client for commands that talk to a running issuerd (demo, health).
/// Commands run on the main thread outside any concurrency pool, so waiting on a semaphore
/// for URLSession is safe here (it would not be inside a server handler).
struct DemoHTTP {
    let baseURL: URL
    var timeout: TimeInterval = 15

    /// One answer: status and parsed JSON (or nil when the body is not JSON).
    struct Answer {
        var status: Int
        var json: [String: Any]?
        var text: String
    }

    func send(
        _ method: String, _ path: String, json body: [String: Any]? = nil, headers: [String: String] = [:],
        rawBody: [UInt8]? = nil
    ) throws -> Answer {
        guard let url = URL(string: path, relativeTo: baseURL) else { throw CommandFailure("bad path \(path)") }
        var request = URLRequest(url: url, timeoutInterval: timeout)
        request.httpMethod = method
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        if let rawBody {
            request.httpBody = Data(rawBody)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        } else if let body {
            request.httpBody = try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let box = ResultBox()
        let semaphore = DispatchSemaphore(value: 0)
        URLSession.shared.dataTask(with: request) { data, response, error in
            box.set(data: data, status: (response as? HTTPURLResponse)?.statusCode, error: error)
            semaphore.signal()
        }.resume()
        semaphore.wait()
        let (data, status, error) = box.get()
        if let error { throw CommandFailure("\(method) \(url.absoluteString): \(error.localizedDescription)") }
        let bytes = data ?? Data()
        return Answer(
            status: status ?? 0, json: try? JSONSerialization.jsonObject(with: bytes) as? [String: Any],
            text: String(decoding: bytes, as: UTF8.self))
    }
}

/// Carries the URLSession completion across threads.
private final class ResultBox: @unchecked Sendable {  // written once before the semaphore signals, read after
    private var data: Data?
    private var status: Int?
    private var error: (any Error)?
    func set(data: Data?, status: Int?, error: (any Error)?) {
        self.data = data
        self.status = status
        self.error = error
    }
    func get() -> (Data?, Int?, (any Error)?) { (data, status, error) }
}
