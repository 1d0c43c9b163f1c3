import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A `neuron` process that keeps running (a dashboard), with its output in files, ended by the
/// test (SIGINT) or, if the test fails first, killed when this is released.
final class LiveNeuron {
    let process = Process()
    let scratch: URL
    private let outURL: URL, errURL: URL

    /// Starts `neuron` with `arguments`; each stream goes to a file.
    init(_ arguments: [String]) throws {
        let directory = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        scratch = FileManager.default.temporaryDirectory.appendingPathComponent("neuron-live-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        (outURL, errURL) = (scratch.appendingPathComponent("stdout"), scratch.appendingPathComponent("stderr"))
        let out = try emptyFileForWriting(outURL), err = try emptyFileForWriting(errURL)
        process.executableURL = directory.appendingPathComponent("neuron")
        process.arguments = arguments
        (process.standardOutput, process.standardError) = (out, err)
        try process.run()
        try out.close()
        try err.close()
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(at: scratch)
    }

    var stdout: String { String(decoding: (try? Data(contentsOf: outURL)) ?? Data(), as: UTF8.self) }
    var stderr: String { String(decoding: (try? Data(contentsOf: errURL)) ?? Data(), as: UTF8.self) }

    /// The dashboard's address once printed (`neuron: dashboard at URL`), waiting at most `timeout` seconds.
    func dashboardURL(timeout: Double = 120) throws -> URL {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let line = stderr.split(separator: "\n").first(where: { $0.hasPrefix("neuron: dashboard at ") }),
                let url = URL(string: String(line.dropFirst("neuron: dashboard at ".count)))
            {
                return url
            }
            guard process.isRunning else { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw LiveNeuronError("no dashboard address within \(timeout) s; stderr: \(stderr)")
    }

    /// Sends SIGINT and waits at most `timeout` seconds for the exit status.
    func interrupt(timeout: Double = 120) throws -> Int32 {
        kill(process.processIdentifier, SIGINT)
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        guard !process.isRunning else { throw LiveNeuronError("still running \(timeout) s after SIGINT") }
        return process.terminationStatus
    }
}

struct LiveNeuronError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// `path` of the dashboard at `url` (whose query holds the token), as a JSON object.
func dashboardJSON(_ url: URL, _ path: String, post body: String? = nil) async throws -> [String: Any] {
    var components = URLComponents(url: url, resolvingAgainstBaseURL: false)!
    let token = components.queryItems!.first { $0.name == "token" }!.value!
    let parts = path.split(separator: "?", maxSplits: 1).map(String.init)
    components.path = parts[0]
    components.query = (parts.count > 1 ? parts[1] + "&" : "") + "token=\(token)"
    var request = URLRequest(url: components.url!)
    if let body {
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(body.utf8)
    }
    let (data, response) = try await URLSession.shared.data(for: request)
    let status = (response as? HTTPURLResponse)?.statusCode ?? 0
    guard status == 200, let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
        throw LiveNeuronError("\(path): status \(status): \(String(decoding: data, as: UTF8.self))")
    }
    return object
}
