import Foundation
import Testing

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
