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

    /// Runs the browser script with `arguments`, bounded: a hung Chromium is killed and the test fails.
    /// Returns what the script saw, or nil (with the issue recorded) when it failed.
    private func drive(_ arguments: [String], in dir: URL, name: String) throws -> [String: Any]? {
        try collect(try launch(arguments, in: dir, name: name), in: dir, name: name)
    }

    /// Starts the browser script with `arguments`, its output in files named after `name`.
    private func launch(_ arguments: [String], in dir: URL, name: String) throws -> Process {
        let browser = Process()
        browser.executableURL = URL(fileURLWithPath: "/usr/bin/python3")  // Debian's, which has python3-selenium
        browser.arguments = [Self.script] + arguments
        let out = dir.appendingPathComponent("\(name).out"), err = dir.appendingPathComponent("\(name).err")
        (browser.standardOutput, browser.standardError) = (try emptyFileForWriting(out), try emptyFileForWriting(err))
        try browser.run()
        return browser
    }

    /// Waits (at most 300 s) for the browser script `launch` started, and returns what it saw.
    private func collect(_ browser: Process, in dir: URL, name: String) throws -> [String: Any]? {
        let out = dir.appendingPathComponent("\(name).out"), err = dir.appendingPathComponent("\(name).err")
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
        return try #require(try JSONSerialization.jsonObject(with: Data(said.utf8)) as? [String: Any], "browser said: \(said) \(complaint)")
    }

    @Test(
        "Curves grow; controls enabled only where the view model honours them; Pause shows paused in the page and the CLI; Step 5 moves exactly 5 steps; Check gradients shows the report; the saved run has only Check gradients and a ‖w‖ chart with an axis"
    )
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

        let seen = try #require(try drive([url.absoluteString, screenshot], in: dir, name: "live"))

        // What the page showed.
        let curve = try #require(seen["curve"] as? [String: Any])
        #expect((seen["chartLabels"] as? [String: Any])?["lossHeading"] as? String == "LOSS PER STEP", "\(seen["chartLabels"] ?? "")")
        #expect((curve["lastStepAfter"] as? Int ?? 0) > (curve["lastStepBefore"] as? Int ?? .max))
        // While running: Pause, Stop and Check gradients (taken at the next step boundary), nothing else.
        let running = try #require(seen["running"] as? [String: Any])
        #expect(running["phase"] as? String == "running")
        #expect(running["enabled"] as? [String] == ["checkGradients", "pause", "stop"], "\(running)")
        #expect(running["accepted"] as? [String] == running["enabled"] as? [String] && running["stepBoxEnabled"] as? Bool == false)
        // The step ("123 / 4,500,000") and each layer's numbers on one line, inside their panels, at 800 and 1280 px.
        #expect((seen["layout"] as? [[String: Any]])?.map { $0["checked"] as? Int ?? 0 }.allSatisfy { $0 >= 9 } == true, "\(seen["layout"] ?? "")")
        let paused = try #require(seen["paused"] as? [String: Any]), stepped = try #require(seen["stepped"] as? [String: Any])
        let pausedAt = try #require(paused["step"] as? Int)
        #expect(paused["phase"] as? String == "paused" && paused["badge"] as? String == "PAUSED")
        #expect(paused["enabled"] as? [String] == ["checkGradients", "reset", "resume", "step", "stop"], "\(paused)")
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

        // The same run from its files: nothing trains, so only Check gradients is enabled; each
        // layer's one snapshot of ‖w‖ is a marker on an axis from step 0, said to be one snapshot;
        // no ‖∂L/∂w‖ is shown, with the reason.
        let files = try LiveNeuron(["dashboard", run])
        let savedSeen = try #require(
            try drive(["--saved", try files.dashboardURL().absoluteString, dir.appendingPathComponent("saved.png").path], in: dir, name: "saved"))
        #expect(try files.interrupt() == 130)
        #expect(savedSeen["enabled"] as? [String] == ["checkGradients"] && savedSeen["accepted"] as? [String] == ["checkGradients"])
        #expect(savedSeen["stepBoxEnabled"] as? Bool == false)
        let charts = try #require(savedSeen["charts"] as? [[String: Any]])
        #expect(charts.count == 2)
        for chart in charts {
            let (x0, x1, step) = (chart["x0"] as? Double ?? .nan, chart["x1"] as? Double ?? .nan, chart["step"] as? Int ?? -1)
            #expect(x0 == 0 && x1 == Double(step) && step == pausedAt + 5, "\(chart)")
            let note = chart["note"] as? String ?? ""
            #expect(note.hasPrefix("one snapshot, at step ") && Int(note.dropFirst(22).filter { $0 != "," }) == step, "\(chart)")
            #expect(chart["gradientShown"] as? String == "—", "\(chart)")
        }
        #expect((savedSeen["gradientNote"] as? String)?.contains("a checkpoint holds the weights, not a step's gradient") == true)
        // metrics.csv keeps each epoch's loss, not each step's: the chart is named for what it draws.
        let labels = try #require(savedSeen["chartLabels"] as? [String: Any])
        #expect(labels["lossHeading"] as? String == "LOSS PER EPOCH", "\(labels)")
        #expect((labels["lossLegend"] as? [String])?.first?.hasPrefix("training loss per epoch") == true, "\(labels)")
        // A classifier's epochs have an accuracy. A saved run has no step's gradient and no
        // saturation (that needs a forward pass): the layers' legend names ‖w‖ alone.
        #expect(labels["epochLegend"] as? [String] == ["training loss", "validation loss", "validation accuracy (right axis)"], "\(labels)")
        #expect(labels["accuracyBox"] as? Bool == true, "\(labels)")
        #expect((labels["layersLegend"] as? [String])?.first == "‖w‖" && (labels["layersLegend"] as? [String])?.count == 2, "\(labels)")
        #expect((savedSeen["layout"] as? [[String: Any]])?.count == 2)
    }

    @Test(
        "A saved text transformer: the attention panel draws the test line's maps, refuses a character outside the vocabulary, draws a typed word's maps (a canvas per head per block, coloured) and shows a cell's weight on hover"
    )
    func attention() throws {
        for tool in ["/usr/bin/chromium", "/usr/bin/chromedriver", "/usr/bin/python3"] where !FileManager.default.isExecutableFile(atPath: tool) {
            Issue.record("\(tool) is missing: apt-get install -y chromium chromium-driver python3-selenium")
            return
        }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("neuron-browser-attention-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let config = dir.appendingPathComponent("words.yaml").path, run = dir.appendingPathComponent("run").path
        try """
        model:
          layers:
            - {kind: embedding, features: 8}
            - {kind: positionEmbedding}
            - {kind: residual, layers: [{kind: layerNorm}, {kind: attention, heads: 2}]}
            - {kind: residual, layers: [{kind: layerNorm}, {kind: attention, heads: 2}]}
            - {units: 27, activation: identity}
        data: {kind: text, path: \(dataDirectory)/words-small.txt}
        training: {epochs: 1, seed: 3}
        """.write(toFile: config, atomically: true, encoding: .utf8)
        let train = try runNeuron(["train", config, "--output", run, "--quiet"])
        #expect(train.status == 0, "\(train.stderr)")
        let files = try LiveNeuron(["dashboard", run])
        let screenshot = dir.appendingPathComponent("attention.png").path
        let seen = try #require(
            try drive(["--attention", try files.dashboardURL().absoluteString, screenshot, "kitchen"], in: dir, name: "attention"))
        #expect(try files.interrupt() == 130)

        // The transformer's title (over 200 characters) is one line of a compact header, cut with
        // an ellipsis, whole in its tooltip.
        let header = try #require(seen["header"] as? [String: Any]), title = try #require(seen["title"] as? String)
        #expect(title.count > 200 && header["text"] as? String == title && header["tooltip"] as? String == title, "\(header)")
        #expect(header["lines"] as? Int == 1 && header["cut"] as? Bool == true, "\(header)")
        #expect((header["height"] as? Double ?? .infinity) < 100, "\(header)")
        // A text run has no accuracy: no legend entry for it. Its files keep each epoch's loss.
        let labels = try #require(seen["chartLabels"] as? [String: Any])
        #expect(labels["epochLegend"] as? [String] == ["training loss", "validation loss"], "\(labels)")
        // A text run has no accuracy: no box waiting for one.
        #expect(labels["accuracyBox"] as? Bool == false, "\(labels)")
        #expect(labels["lossHeading"] as? String == "LOSS PER EPOCH", "\(labels)")
        // No layer of this transformer has tanh units.
        #expect((labels["layersLegend"] as? [String])?.contains("saturated share (tanh, right axis)") == false, "\(labels)")

        // The prefilled line is the run's first test line, drawn without a click.
        #expect((seen["line"] as? String).map { !$0.isEmpty } == true && seen["prefilled"] as? String == seen["line"] as? String)
        #expect(
            (seen["refusal"] as? String)?.contains("'Z' (U+005A), character 0 of \"Zz\" (counted from 0), is not in the model's vocabulary") == true)
        #expect(seen["labels"] as? [String] == ["⏎", "k", "i", "t", "c", "h", "e", "n"] && seen["heads"] as? [Int] == [2, 2])
        #expect((seen["status"] as? String)?.hasPrefix("2 blocks × 2 heads over 8 positions") == true, "\(seen["status"] ?? "")")
        // A canvas per head per block, each coloured: the lower triangle (36 of 64 cells) and the labels.
        let maps = try #require(seen["maps"] as? [[String: Any]])
        #expect(maps.map { "\($0["block"] ?? "") \($0["head"] ?? "")" } == ["0 0", "0 1", "1 0", "1 1"])
        for map in maps {
            #expect(map["positions"] as? Int == 8 && (map["coloured"] as? Double ?? 0) > 0.3 && (map["colours"] as? Int ?? 0) > 8, "\(map)")
        }
        // The hovered cell (block 0, head 0, row n, column ⏎) shows the weight the route gave.
        let weight = try #require(seen["weight"] as? Double)
        #expect((seen["tip"] as? String) == "block 0 head 0: n (7) → ⏎ (0), weight \(String(format: "%.4f", weight))", "\(seen["tip"] ?? "")")
        let png = try Data(contentsOf: URL(fileURLWithPath: screenshot))
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]) && png.count > 10_000)
    }

    @Test(
        "A live run that finishes: the page shows FINISHED, the final evaluation on the test rows, no control enabled, and once the server has gone no reconnecting"
    )
    func end() throws {
        for tool in ["/usr/bin/chromium", "/usr/bin/chromedriver", "/usr/bin/python3"] where !FileManager.default.isExecutableFile(atPath: tool) {
            Issue.record("\(tool) is missing: apt-get install -y chromium chromium-driver python3-selenium")
            return
        }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("neuron-browser-end-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        // A few seconds: long enough for a page already open to see it train, short enough to wait for its end.
        let config = try digitsWithTestRows(in: dir), run = dir.appendingPathComponent("run").path

        // Chromium first (it takes seconds to start), then the run, its address handed over in a file.
        let urlFile = dir.appendingPathComponent("url").path
        let screenshot = ProcessInfo.processInfo.environment["NEURON_DASHBOARD_END_SCREENSHOT"] ?? dir.appendingPathComponent("end.png").path
        let browser = try launch(["--end", urlFile, screenshot], in: dir, name: "end")
        let ready = Date().addingTimeInterval(120)
        while !FileManager.default.fileExists(atPath: urlFile + ".ready"), browser.isRunning, Date() < ready { Thread.sleep(forTimeInterval: 0.05) }
        let live = try LiveNeuron(["train", config, "--output", run, "--dashboard", "--quiet"])
        try live.dashboardURL().absoluteString.write(toFile: urlFile, atomically: true, encoding: .utf8)
        let seen = try #require(try collect(browser, in: dir, name: "end"))
        let exited = Date().addingTimeInterval(60)
        while live.process.isRunning, Date() < exited { Thread.sleep(forTimeInterval: 0.05) }
        #expect(!live.process.isRunning && live.process.terminationStatus == 0, "\(live.stderr)")

        let running = try #require(seen["running"] as? [String: Any])
        #expect(running["enabled"] as? [String] == ["checkGradients", "pause", "stop"] && running["connection"] as? String == "connected")
        let ended = try #require(seen["ended"] as? [String: Any])
        #expect(ended["phase"] as? String == "finished" && ended["badge"] as? String == "FINISHED", "\(ended)")
        #expect(ended["step"] as? Int == ended["totalSteps"] as? Int)
        #expect(ended["enabled"] as? [String] == [] && ended["stepBoxEnabled"] as? Bool == false, "\(ended)")
        #expect(ended["sectionShown"] as? Bool == true && ended["heading"] as? String == "THE RUN FINISHED", "\(ended)")
        // The final evaluation as summary.json has it, to the page's four decimals.
        let written = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: run + "/summary.json"))) as? [String: Any])
        let (loss, accuracy) = (try #require(written["evaluationLoss"] as? Double), try #require(written["evaluationAccuracy"] as? Double))
        #expect(written["evaluatedOn"] as? String == "test")
        #expect(ended["loss"] as? String == String(format: "%.4f", loss), "\(ended)")
        #expect(ended["accuracy"] as? String == String(format: "%.4f", accuracy), "\(ended)")
        #expect((ended["connection"] as? String)?.hasPrefix("run ended") == true, "\(ended)")
        // The server has gone: the page stays as it was, and says why, rather than reconnecting.
        let after = try #require(seen["afterServer"] as? [String: Any])
        #expect(after["phase"] as? String == "finished" && after["framesSince"] as? Int == 0 && after["enabled"] as? [String] == [])
        let connection = after["connection"] as? String ?? ""
        #expect(connection.hasPrefix("run ended") && !connection.contains("reconnecting"), "\(connection)")
        let png = try Data(contentsOf: URL(fileURLWithPath: screenshot))
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]) && png.count > 20_000)
    }
}
