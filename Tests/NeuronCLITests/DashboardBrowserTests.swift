import Foundation
import Testing

/// The dashboard in a real browser: Debian's headless Chromium driven by Selenium
/// (`Tests/Browser/dashboard_in_chromium.py`) against a live `neuron train --dashboard --json`.
/// Needs `chromium chromium-driver python3-selenium` (the README's test command installs them):
/// without them this test fails, saying what to install, rather than passing unseen.
@Suite("The dashboard in headless Chromium")
struct DashboardBrowserTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../Browser/dashboard_in_chromium.py")
        .standardized.path

    @Test("Curves grow; Pause shows paused in the page and the CLI; Step 5 moves exactly 5 steps; Check gradients shows the report")
    func browser() throws {
        for tool in ["/usr/bin/chromium", "/usr/bin/chromedriver", "/usr/bin/python3"] where !FileManager.default.isExecutableFile(atPath: tool) {
            Issue.record("\(tool) is missing: apt-get install -y chromium chromium-driver python3-selenium")
            return
        }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("neuron-browser-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let run = dir.appendingPathComponent("digits").path
        let live = try LiveNeuron(["train", "\(dataDirectory)/digits.yaml", "--epochs", "100000", "--output", run, "--dashboard", "--json"])
        let url = try live.dashboardURL()
        let screenshot = ProcessInfo.processInfo.environment["NEURON_DASHBOARD_SCREENSHOT"] ?? dir.appendingPathComponent("dashboard.png").path

        // The browser, bounded: a hung Chromium is killed and the test fails.
        let browser = Process()
        browser.executableURL = URL(fileURLWithPath: "/usr/bin/python3")  // Debian's, which has python3-selenium
        browser.arguments = [Self.script, url.absoluteString, screenshot]
        let out = dir.appendingPathComponent("browser.out"), err = dir.appendingPathComponent("browser.err")
        FileManager.default.createFile(atPath: out.path, contents: nil)
        FileManager.default.createFile(atPath: err.path, contents: nil)
        (browser.standardOutput, browser.standardError) = (try FileHandle(forWritingTo: out), try FileHandle(forWritingTo: err))
        try browser.run()
        let deadline = Date().addingTimeInterval(300)
        while browser.isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }
        if browser.isRunning {
            browser.terminate()
            Issue.record("the browser did not finish within 300 s")
        }
        browser.waitUntilExit()
        let said = String(decoding: try Data(contentsOf: out), as: UTF8.self)
        let complaint = String(decoding: try Data(contentsOf: err), as: UTF8.self)
        #expect(browser.terminationStatus == 0, "the browser run failed: \(complaint)")
        let seen = try #require(try JSONSerialization.jsonObject(with: Data(said.utf8)) as? [String: Any], "browser said: \(said) \(complaint)")

        // What the page showed.
        let curve = try #require(seen["curve"] as? [String: Any])
        #expect((curve["lastStepAfter"] as? Int ?? 0) > (curve["lastStepBefore"] as? Int ?? .max))
        let paused = try #require(seen["paused"] as? [String: Any]), stepped = try #require(seen["stepped"] as? [String: Any])
        let pausedAt = try #require(paused["step"] as? Int)
        #expect(paused["phase"] as? String == "paused" && paused["badge"] as? String == "PAUSED")
        #expect(stepped["phase"] as? String == "paused" && stepped["step"] as? Int == pausedAt + 5)
        let check = try #require(seen["check"] as? [String: Any])
        #expect(check["passed"] as? String == "true" && check["tensorRows"] as? Int == 4)
        #expect((seen["explain"] as? [String: Any])?["rows"] as? Int ?? 0 > 64)
        let png = try Data(contentsOf: URL(fileURLWithPath: screenshot))
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]) && png.count > 20_000)

        // What the CLI's own view of the same view model showed: paused at that step, then paused 5 steps on.
        let status = try live.interrupt()
        #expect(status == 130, "\(live.stderr)")
        let states = live.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let pausedSteps = states.filter { $0["phase"] as? String == "paused" }.compactMap { $0["step"] as? Int }
        #expect(pausedSteps.contains(pausedAt) && pausedSteps.contains(pausedAt + 5), "paused at \(pausedSteps)")
        #expect(!pausedSteps.contains { $0 > pausedAt && $0 < pausedAt + 5 }, "paused at \(pausedSteps)")
        // Ctrl-C stops the paused run where the page left it.
        #expect(live.stdout.contains(#""phase":"stopped""#))
    }
}
