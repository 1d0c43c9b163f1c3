import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `neuron train --dashboard` and `neuron dashboard RUN_DIR`, through HTTP without a browser.
@Suite("neuron dashboard and train --dashboard")
struct DashboardCommandTests {
    private func scratch() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("neuron-dashboard-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test("A finished run's directory is served from its files; Check gradients works on the saved weights")
    func savedRun() async throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let run = dir.appendingPathComponent("xor").path
        #expect(try runNeuron(["train", "\(dataDirectory)/xor.yaml", "--epochs", "300", "--output", run, "--quiet"]).status == 0)
        let live = try LiveNeuron(["dashboard", run])
        let url = try live.dashboardURL()
        #expect(url.host == "127.0.0.1" && !live.stderr.contains("warning"))
        let state = try await dashboardJSON(url, "/api/state")
        #expect(state["phase"] as? String == "finished" && state["source"] as? String == "files")
        #expect(state["step"] as? Int == 300 && state["epoch"] as? Int == 300)
        let metrics = try String(contentsOfFile: run + "/metrics.csv", encoding: .utf8)
        #expect((state["records"] as? [Any])?.count == metrics.split(separator: "\n").count - 1)
        #expect((state["layers"] as? [[String: Any]])?.first?["title"] as? String == "Dense(2→4, tanh)")
        // Nothing trains here: start is ignored, and says so.
        let started = try await dashboardJSON(url, "/api/event", post: #"{"event":"start"}"#)
        #expect(started["ignoredEventCount"] as? Int == 1 && started["phase"] as? String == "finished")
        _ = try await dashboardJSON(url, "/api/event", post: #"{"event":"checkGradients"}"#)
        var checked: [String: Any] = [:]
        for _ in 0..<200 where checked["gradientCheck"] == nil {
            try await Task.sleep(for: .milliseconds(50))
            checked = try await dashboardJSON(url, "/api/state")
        }
        let report = try #require(checked["gradientCheck"] as? [String: Any])
        #expect((report["tensors"] as? [Any])?.count == 4)
        let explained = try await dashboardJSON(url, "/api/explain?layer=1&unit=0")
        #expect((explained["table"] as? String)?.hasPrefix("Unit 0 of layer 1 Dense(4→1, tanh)") == true)
        #expect(try live.interrupt() == 130)
    }

    @Test(
        "train --dashboard: a page connected when the run finishes is sent the final state with the test evaluation, then its stream closes and the process exits 0"
    )
    func endOfRun() throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        // Long enough for the page to connect while the run trains.
        let config = try digitsWithTestRows(in: dir), run = dir.appendingPathComponent("run").path
        let live = try LiveNeuron(["train", config, "--output", run, "--dashboard", "--quiet"])
        let (text, closed) = try eventStream(try live.dashboardURL(), timeout: 300)
        let deadline = Date().addingTimeInterval(60)
        while live.process.isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        #expect(!live.process.isRunning && live.process.terminationStatus == 0, "\(live.stderr)")
        #expect(closed, "the server closed the stream")

        let frames = text.components(separatedBy: "\n\n").compactMap { event -> [String: Any]? in
            guard let data = event.components(separatedBy: "data: ").last, event.contains("data: ") else { return nil }
            return try? JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any]
        }
        #expect(frames.first?["phase"] as? String == "running", "the page saw the run training")
        let last = try #require(frames.last)
        #expect(last["phase"] as? String == "finished" && last["step"] as? Int == last["totalSteps"] as? Int)
        #expect((last["acceptedEvents"] as? [String])?.isEmpty == true)
        #expect(frames.dropLast().allSatisfy { $0["ending"] == nil }, "only the last frame is the end")
        let summary = try #require((last["ending"] as? [String: Any])?["summary"] as? [String: Any], "\(last["ending"] ?? "no ending")")
        let written = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: run + "/summary.json"))) as? [String: Any])
        #expect(summary["evaluatedOn"] as? String == "test")
        #expect(summary["evaluationLoss"] as? Double == written["evaluationLoss"] as? Double && summary["evaluationLoss"] != nil)
        #expect(summary["evaluationAccuracy"] as? Double == written["evaluationAccuracy"] as? Double)
    }

    @Test("--host beyond loopback warns; a bad --host or --port is refused before training")
    func hosts() throws {
        let dir = try scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let bad = try runNeuron([
            "train", "\(dataDirectory)/xor.yaml", "--output", dir.appendingPathComponent("a").path, "--dashboard", "--host", "nowhere",
        ])
        #expect(bad.status == 2 && bad.stderr.contains("--host nowhere: expected an IPv4 or IPv6 address"), "\(bad.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("a/checkpoint.safetensors").path))
        let port = try runNeuron(["train", "\(dataDirectory)/xor.yaml", "--dashboard", "--port", "70000"])
        #expect(port.status == 2 && port.stderr.contains("--port must be 0 to 65535"))
        let alone = try runNeuron(["train", "\(dataDirectory)/xor.yaml", "--port", "8000"])
        #expect(alone.status == 2 && alone.stderr.contains("--port and --host need --dashboard"))
        // 0.0.0.0 listens on every interface; the test only reads the warning, then stops the run.
        let wide = try LiveNeuron([
            "train", "\(dataDirectory)/xor.yaml", "--epochs", "100000", "--output", dir.appendingPathComponent("b").path, "--dashboard", "--host",
            "0.0.0.0",
        ])
        _ = try wide.dashboardURL()
        #expect(wide.stderr.contains("warning: the dashboard listens on 0.0.0.0, not loopback"))
        #expect(try wide.interrupt() == 130)
    }
}

/// The event stream of the dashboard at `url` (whose query holds the token), read over a plain
/// socket until the server closes it or `timeout` seconds pass: what arrived, and whether it closed.
private func eventStream(_ url: URL, timeout: Double) throws -> (text: String, closed: Bool) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0, let port = url.port, let query = url.query else { throw LiveNeuronError("cannot open a socket for \(url)") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else { throw LiveNeuronError("cannot connect to \(url)") }
    let request = Array("GET /events?\(query) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n".utf8)
    _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    var received: [UInt8] = [], buffer = [UInt8](repeating: 0, count: 65536)
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&ready, 1, 100) > 0 else { continue }
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n <= 0 { return (String(decoding: received, as: UTF8.self), true) }
        received += buffer[0..<n]
    }
    return (String(decoding: received, as: UTF8.self), false)
}

/// A config in `dir` for digits.yaml's network with the last 297 rows of digits.csv as test rows
/// (so that the run ends with a final evaluation on them), trained for 300 epochs: about 11,000
/// steps, a few seconds in a debug build. Returns its path.
func digitsWithTestRows(in dir: URL) throws -> String {
    let config = dir.appendingPathComponent("digits.yaml").path
    let rows = try String(contentsOfFile: "\(dataDirectory)/digits.csv", encoding: .utf8).split(separator: "\n")
    let (train, test) = (dir.appendingPathComponent("train.csv").path, dir.appendingPathComponent("test.csv").path)
    try (rows.prefix(1501).joined(separator: "\n") + "\n").write(toFile: train, atomically: true, encoding: .utf8)
    try (([rows[0]] + rows.dropFirst(1501)).joined(separator: "\n") + "\n").write(toFile: test, atomically: true, encoding: .utf8)
    try String(contentsOfFile: "\(dataDirectory)/digits.yaml", encoding: .utf8)
        .replacingOccurrences(of: "path: digits.csv", with: "path: \(train)\n  testPath: \(test)")
        .replacingOccurrences(of: "epochs: 20", with: "epochs: 300")
        .write(toFile: config, atomically: true, encoding: .utf8)
    return config
}
