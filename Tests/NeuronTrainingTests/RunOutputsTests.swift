import Foundation
import NeuronCore
import Testing

@testable import NeuronTraining

// MARK: - Reading the files back

/// `metrics.csv` read back: one dictionary per row, empty cells left out.
private func readMetrics(_ path: String) throws -> (header: [String], rows: [[String: Double]]) {
    let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map {
        $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
    }
    let header = try #require(lines.first)
    let rows = try lines.dropFirst().map { cells in
        try #require(cells.count == header.count, "a row of \(cells.count) cells under \(header.count) columns")
        var row: [String: Double] = [:]
        for (name, cell) in zip(header, cells) where !cell.isEmpty {
            // Typed: straight into the Double? entry, #require is checked against Double? and warns that it is redundant.
            let value: Double = try #require(Double(cell), "\(name): '\(cell)'")
            row[name] = value
        }
        return row
    }
    return (header, rows)
}

/// One SVG element in document order: its name, its attributes and, for `<text>`, its text.
private struct SVGElement {
    var name: String
    var attributes: [String: String]
    var text = ""

    func number(_ attribute: String) throws -> Double {
        try #require(attributes[attribute].flatMap(Double.init), "\(name) has no number \(attribute)")
    }
}

/// The elements of each `<g>` group of an SVG, by a small tag scanner (our SVG has no comments,
/// CDATA or nested quotes: the scanner needs no more than tags, attributes and text).
private func svgGroups(_ svg: String) throws -> [[SVGElement]] {
    let tag = /<(\/?)([a-z]+)((?:\s+[a-z0-9:-]+="[^"]*")*)\s*(\/?)>([^<]*)/
    let attribute = /([a-z0-9:-]+)="([^"]*)"/
    var groups: [[SVGElement]] = [], current: [SVGElement]?
    for match in svg.matches(of: tag) {
        let (closing, name, attributes, text) = (match.1 == "/", String(match.2), match.3, match.5)
        if name == "g" {
            if closing { groups.append(try #require(current)); current = nil } else { current = [] }
            continue
        }
        guard !closing, current != nil else { continue }
        var element = SVGElement(name: name, attributes: [:])
        for a in attributes.matches(of: attribute) { element.attributes[String(a.1)] = String(a.2) }
        if name == "text" { element.text = String(text) }
        current!.append(element)
    }
    return groups
}

/// A linear axis read off its tick labels: value = v0 + (pixel - p0) · (v1 - v0) / (p1 - p0),
/// from the two ticks farthest apart.
private struct Axis {
    var p0: Double, v0: Double, p1: Double, v1: Double

    init(ticks: [(pixel: Double, value: Double)]) throws {
        try #require(ticks.count >= 2, "an axis needs two labelled ticks, found \(ticks.count)")
        (p0, v0, p1, v1) = (ticks.first!.pixel, ticks.first!.value, ticks.last!.pixel, ticks.last!.value)
    }

    func value(_ pixel: Double) -> Double { v0 + (pixel - p0) * (v1 - v0) / (p1 - p0) }
    /// The value of a fifth of a pixel: coordinates are written to 0.1 px, so a point and the two
    /// ticks it is read against are each within 0.05 px of where they were computed.
    var tolerance: Double { 0.2 * abs((v1 - v0) / (p1 - p0)) }
}

/// A panel of `curves.svg` read back: its axis label and, by legend name, its series in data units.
private struct Panel {
    var label: String
    var series: [String: [(x: Double, y: Double)]] = [:]
    var xAxis: Axis, yAxis: Axis
    var circles = 0

    init(_ elements: [SVGElement]) throws {
        // Grid lines (#ddd) carry the y ticks, short #444 marks the x ticks; the label follows each.
        var yTicks: [(Double, Double)] = [], xTicks: [(Double, Double)] = []
        for (line, text) in zip(elements, elements.dropFirst()) where line.name == "line" && text.name == "text" {
            if line.attributes["stroke"] == "#ddd", let value = Double(text.text) { yTicks.append((try line.number("y1"), value)) }
            if line.attributes["stroke"] == "#444", line.attributes["x1"] == line.attributes["x2"], let value = Double(text.text) {
                xTicks.append((try line.number("x1"), value))
            }
        }
        (xAxis, yAxis) = (try Axis(ticks: xTicks), try Axis(ticks: yTicks))
        label = try #require(elements.first { $0.attributes["transform"]?.hasPrefix("rotate(-90") == true }).text
        // The legend names the lines in the order they are drawn.
        let lines = elements.filter { $0.name == "polyline" }
        let names = elements.filter { $0.name == "text" && $0.attributes["text-anchor"] == nil }.map(\.text)
        try #require(lines.count == names.count, "\(lines.count) lines, \(names.count) legend entries")
        for (line, name) in zip(lines, names) {
            let points = try #require(line.attributes["points"]).split(separator: " ").map { pair in
                let xy = pair.split(separator: ",").compactMap { Double($0) }
                return (x: xAxis.value(xy[0]), y: yAxis.value(xy[1]))
            }
            series[name] = points
        }
        circles = elements.filter { $0.name == "circle" }.count
    }
}

/// Expects `series` to be exactly the rows of `metrics` that have `column`: x the epoch, y the value.
private func expectPlotted(
    _ panel: Panel, _ name: String, column: String, _ metrics: [[String: Double]],
    sourceLocation: SourceLocation = #_sourceLocation
) {
    let expected = metrics.compactMap { row in row[column].map { (x: row["epoch"]!, y: $0) } }
    guard let plotted = panel.series[name] else {
        Issue.record("no series '\(name)' in the \(panel.label) panel", sourceLocation: sourceLocation)
        return
    }
    #expect(plotted.count == expected.count, "\(name): \(plotted.count) points for \(expected.count) values", sourceLocation: sourceLocation)
    for (point, value) in zip(plotted, expected) {
        #expect(
            abs(point.x - value.x) <= panel.xAxis.tolerance && abs(point.y - value.y) <= panel.yAxis.tolerance,
            "\(name) at epoch \(value.x): plotted (\(point.x), \(point.y)), recorded \(value.y)", sourceLocation: sourceLocation)
    }
}

@Suite("RunOutputs: metrics.csv, curves.svg and summary.json, each written whole")
struct RunOutputsTests {
    @Test("metrics.csv: a header and one row per epoch, empty cells for what was not measured")
    func metrics() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        let outputs = RunOutputs(directory: directory.path)
        try outputs.writeMetrics([
            EpochRecord(epoch: 1, step: 8, trainingLoss: 0.5, trainingAccuracy: 0.75, validationLoss: 0.625, validationAccuracy: nil),
            EpochRecord(epoch: 2, step: 16, trainingLoss: 0.25, trainingAccuracy: nil, validationLoss: nil, validationAccuracy: 1),
        ])
        #expect(
            try String(contentsOfFile: outputs.path("metrics.csv"), encoding: .utf8) == """
                epoch,step,training_loss,training_accuracy,validation_loss,validation_accuracy
                1,8,0.5,0.75,0.625,
                2,16,0.25,,,1.0

                """)
        #expect(try directory.names() == ["metrics.csv"])  // written atomically: no temporary file left
    }

    @Test("curves.svg plots exactly the values of metrics.csv, read back through the SVG's own axes")
    func curvesMatchMetrics() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        var engine = try #require(try RunBuilder.build(try irisConfig(epochs: 12)).engine as? NetworkTrainingEngine<Float, SGD<Float>>)
        while !engine.isFinished { _ = engine.step() }
        let outputs = RunOutputs(directory: directory.path)
        try outputs.writeMetrics(engine.records)
        try outputs.writeCurves(engine.records, title: "iris <4-8-3>")
        let metrics = try readMetrics(outputs.path("metrics.csv")).rows
        #expect(metrics.count == 12)

        let svg = try String(contentsOfFile: outputs.path("curves.svg"), encoding: .utf8)
        #expect(svg.contains(">iris &lt;4-8-3&gt;</text>"))  // the title, escaped
        let panels = try svgGroups(svg).map(Panel.init)
        #expect(panels.map(\.label) == ["loss", "accuracy"])
        #expect(Set(panels[0].series.keys) == ["training loss", "validation loss"])
        #expect(Set(panels[1].series.keys) == ["training accuracy", "validation accuracy"])
        expectPlotted(panels[0], "training loss", column: "training_loss", metrics)
        expectPlotted(panels[0], "validation loss", column: "validation_loss", metrics)
        expectPlotted(panels[1], "training accuracy", column: "training_accuracy", metrics)
        expectPlotted(panels[1], "validation accuracy", column: "validation_accuracy", metrics)
        // The two losses differ, so a swapped or misplaced series could not pass.
        #expect(zip(metrics.map { $0["training_loss"]! }, metrics.map { $0["validation_loss"]! }).contains { abs($0 - $1) > 0.01 })
    }

    @Test("curves.svg for a regression: one panel, and a lone point drawn as a dot")
    func curvesRegression() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        let outputs = RunOutputs(directory: directory.path)
        let records = (1...5).map {
            EpochRecord(
                epoch: $0, step: 10 * $0, trainingLoss: 1 / Double($0), trainingAccuracy: nil,
                validationLoss: $0 == 5 ? 0.3 : nil, validationAccuracy: nil)
        }
        try outputs.writeMetrics(records)
        try outputs.writeCurves(records, title: "sine")
        let panels = try svgGroups(try String(contentsOfFile: outputs.path("curves.svg"), encoding: .utf8)).map(Panel.init)
        #expect(panels.map(\.label) == ["loss"] && panels[0].circles == 1)
        let metrics = try readMetrics(outputs.path("metrics.csv")).rows
        expectPlotted(panels[0], "training loss", column: "training_loss", metrics)
        expectPlotted(panels[0], "validation loss", column: "validation_loss", metrics)
    }

    @Test("curves.svg's legends sit above their plots: no curve's point or segment passes under one")
    func curvesLegendsClearOfData() throws {
        // Accuracy climbing to 0.98 runs along the top of its plot, right across where a legend in
        // the top-right corner would sit; loss falls along the bottom.
        let records = (1...30).map { e in
            let rise = 1 - exp(-Double(e) / 4)
            return EpochRecord(
                epoch: e, step: 45 * e, trainingLoss: 2 * exp(-Double(e) / 3), trainingAccuracy: 0.6 + 0.38 * rise,
                validationLoss: 2.2 * exp(-Double(e) / 3.5) + 0.05, validationAccuracy: 0.58 + 0.37 * rise)
        }
        let svg = Curves.svg(records, title: "digits")
        let groups = try svgGroups(svg)
        #expect(groups.count == 2)
        for elements in groups {
            let frame = try #require(elements.first { $0.name == "rect" && $0.attributes["stroke"] == "#444" })
            let plot = (x: try frame.number("x"), y: try frame.number("y"), width: try frame.number("width"), height: try frame.number("height"))
            // The legend: its line samples (horizontal, in a series' colour) and its names (texts
            // without an anchor), each name taken as 7 px a character wide and 12 px tall.
            let samples = elements.filter { $0.name == "line" && !["#444", "#ddd"].contains($0.attributes["stroke"] ?? "") }
            let names = elements.filter { $0.name == "text" && $0.attributes["text-anchor"] == nil }
            try #require(samples.count == 2 && names.count == 2)
            var boxes: [(x0: Double, y0: Double, x1: Double, y1: Double)] = []
            for line in samples { boxes.append((try line.number("x1"), try line.number("y1") - 2, try line.number("x2"), try line.number("y1") + 2)) }
            for text in names {
                let (x, y) = (try text.number("x"), try text.number("y"))
                boxes.append((x, y - 12, x + 7 * Double(text.text.count), y + 3))
            }
            let legend = (
                x0: boxes.map(\.x0).min()!, y0: boxes.map(\.y0).min()!, x1: boxes.map(\.x1).max()!, y1: boxes.map(\.y1).max()!
            )
            #expect(legend.y1 <= plot.y && legend.x1 <= plot.x + plot.width, "legend \(legend) overlaps the plot \(plot)")
            // Every polyline, sampled along each segment, stays out of the legend's box.
            for line in elements where line.name == "polyline" {
                let points = try #require(line.attributes["points"]).split(separator: " ").map { pair in
                    let xy = pair.split(separator: ",").compactMap { Double($0) }
                    return (x: xy[0], y: xy[1])
                }
                #expect(points.count == 30)
                for (a, b) in zip(points, points.dropFirst()) {
                    for k in 0...20 {
                        let t = Double(k) / 20, (x, y) = (a.x + t * (b.x - a.x), a.y + t * (b.y - a.y))
                        #expect(
                            !(x >= legend.x0 && x <= legend.x1 && y >= legend.y0 && y <= legend.y1),
                            "\(line.attributes["stroke"] ?? "") passes under the legend at (\(x), \(y))")
                    }
                }
            }
            // The legend names what is drawn, in the order it is drawn.
            #expect(names.map(\.text) == (plot.y < 200 ? ["training loss", "validation loss"] : ["training accuracy", "validation accuracy"]))
        }
    }

    @Test("summary.json holds the final state's progress and the summary, and leaves out what a run did not have")
    func summary() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        let outputs = RunOutputs(directory: directory.path)
        var state = TrainingViewState()
        (state.title, state.phase, state.progress.epoch, state.progress.totalEpochs, state.progress.step, state.progress.totalSteps) = (
            "Network[Dense(2→1, tanh)]", .finished, 3, 3, 12, 12
        )
        (state.progress.seed, state.learningRate) = (9, 0.5)
        state.records = [EpochRecord(epoch: 3, step: 12, trainingLoss: 0.125, trainingAccuracy: nil, validationLoss: nil, validationAccuracy: nil)]
        var summary = RunSummary(precision: "double", blas: "OpenBLAS", trainingSeconds: 0.5)
        summary.trainingLoss = 0.125
        summary.evaluatedOn = "test"
        try outputs.writeSummary(summary, state: state)
        let data = try Data(contentsOf: URL(fileURLWithPath: outputs.path("summary.json")))
        #expect(try JSONDecoder().decode(RunSummary.self, from: data) == summary)
        var progress = state
        progress.records = []  // the progress has no lists
        #expect(try TrainingViewState.decoder().decode(TrainingViewState.self, from: data) == progress)
        let keys = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any]).keys
        #expect(
            Set(keys) == [
                "title", "phase", "epoch", "totalEpochs", "step", "totalSteps", "learningRate", "seed", "ignoredEventCount", "precision",
                "blas", "trainingSeconds", "trainingLoss", "evaluatedOn",
            ])
    }

    @Test("prepare makes the directory; holdsRun says whether a checkpoint is there")
    func directory() throws {
        let root = try CheckpointTestDirectory()
        defer { root.remove() }
        let outputs = RunOutputs(directory: root.file("runs/xor"))
        #expect(outputs.path("metrics.csv") == root.file("runs/xor/metrics.csv"))
        try outputs.prepare()
        #expect(FileManager.default.fileExists(atPath: root.file("runs/xor")) && !outputs.holdsRun)
        let run = try RunBuilder.build(try xorConfig())
        try Checkpoint(run.engine, config: run.config, preprocessing: run.preprocessing).write(to: outputs.directory)
        #expect(outputs.holdsRun)
    }

    // MARK: The run directory

    @Test("An output path that cannot be a run directory: one line naming the path and the problem")
    func unusableDirectory() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        let file = try directory.write([1], "file")
        func message(_ path: String) -> String {
            do {
                try RunOutputs(directory: path).prepare()
                return "no error"
            } catch { return error.description }
        }
        #expect(message(file) == "\(file): cannot use as the run directory: it is a file, not a directory; choose another --output")
        #expect(message("/dev/null") == "/dev/null: cannot use as the run directory: it is a file, not a directory; choose another --output")
        #expect(message(file + "/run").contains("(at \(file)): it is a file, not a directory"))
        let long = directory.path + "/" + String(repeating: "a", count: 300)
        #expect(message(long) == "\(long): cannot use as the run directory: File name too long; choose another --output")
        #expect(message(directory.path + "/new/run") == "no error")
        #expect(FileManager.default.fileExists(atPath: directory.path + "/new/run"))
    }

    @Test("The lock admits one process's run at a time, and is free again once released")
    func lock() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        let outputs = RunOutputs(directory: directory.path)
        var held: RunDirectoryLock? = try outputs.lock()
        // flock locks belong to the open file: a second open, even in this process, is refused.
        #expect(throws: RunError.self) { try outputs.lock() }
        do {
            _ = try outputs.lock()
        } catch {
            #expect(error.description.contains("another neuron process is training into this run directory"))
        }
        withExtendedLifetime(held) {}
        held = nil
        #expect(throws: Never.self) { _ = try outputs.lock() }
    }

    @Test("Temporary files left by a killed writer are removed: all under the lock, else only a dead process's")
    func staleTemporaryFiles() throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        let dead = ".checkpoint.json.tmp-2147483646-0", alive = ".metrics.csv.tmp-1-3", own = ".curves.svg.tmp-\(getpid())-0"
        for name in [dead, alive, own, ".hidden", "checkpoint.json"] { _ = try directory.write([1], name) }
        let outputs = RunOutputs(directory: directory.path)
        #expect(outputs.removeStaleTemporaryFiles(lockHeld: false) == [dead])
        #expect(outputs.removeStaleTemporaryFiles(lockHeld: true) == [alive])
        #expect(try directory.names() == [".curves.svg.tmp-\(getpid())-0", ".hidden", "checkpoint.json"])
    }
}
