// A training run's state as text: one line for a live display or a log, a multi-line report, and
// one JSON object per line for machines. Pure functions of a `TrainingViewState` (no clock, no
// I/O), so every phase can be rendered from a preview view model with injected state.
import Foundation
import NeuronCore
import NeuronTraining

/// Turns a `TrainingViewState` into text. Pure functions of the state: no clock, no I/O.
public struct ProgressRenderer: Sendable {
    /// A renderer.
    public init() {}

    /// One line for a live terminal display or a log, e.g.
    /// `running  epoch 3/20  step 1,234/9,380  loss 0.4123 (avg 0.4301)  val acc 0.8712  52,340 samples/s  1m 05s left`.
    ///
    /// The phase is always first (with its details when diverged or failed); fields that are nil,
    /// and epoch or step counts when nothing is planned or done yet, are left out.
    public func line(_ state: TrainingViewState) -> String {
        // A live display redraws one line in place: a message with line breaks would scroll it.
        var fields = [state.phaseText.replacingOccurrences(of: "\n", with: " ")]
        if let epochs = Self.progress(state.progress.epoch, of: state.progress.totalEpochs) { fields.append("epoch \(epochs)") }
        if let steps = Self.progress(state.progress.step, of: state.progress.totalSteps) { fields.append("step \(steps)") }
        if let losses = Self.losses(state) { fields.append("loss \(losses)") }
        if let loss = state.validationLoss {
            fields.append("val loss \(Self.number(loss))" + (state.validationBitsPerCharacter.map { " (\(Self.number($0)) bits/char)" } ?? ""))
        }
        if let accuracy = state.validationAccuracy { fields.append("val acc \(Self.number(accuracy))") }
        if let speed = state.samplesPerSecond { fields.append("\(Self.count(speed)) samples/s") }
        if let ranks = state.rankStepSeconds { fields.append("step/rank \(Self.milliseconds(ranks))") }
        if let remaining = state.secondsRemaining { fields.append("\(Self.duration(remaining)) left") }
        return fields.joined(separator: "  ")
    }

    /// A multi-line report: title, phase, epoch and step, losses, validation, speed, learning rate,
    /// seed; a table of the layers; a text model's sampled lines; the neuron's row of Docs/Reference.md §1's table (at full precision, to be
    /// checked by hand); the gradient check's verdict; the ignored events. Nil fields are left out.
    public func report(_ state: TrainingViewState) -> String {
        var lines: [String] = []
        if !state.title.isEmpty { lines.append(state.title) }

        var summary: [(String, String)] = [("phase", state.phaseText)]
        if let epochs = Self.progress(state.progress.epoch, of: state.progress.totalEpochs) { summary.append(("epoch", epochs)) }
        if let steps = Self.progress(state.progress.step, of: state.progress.totalSteps) { summary.append(("step", steps)) }
        if let losses = Self.losses(state) { summary.append(("loss", losses)) }
        let validation = [
            state.validationLoss.map { "loss \(Self.number($0))" },
            state.validationBitsPerCharacter.map { "\(Self.number($0)) bits per character" },
            state.validationAccuracy.map { "accuracy \(Self.number($0))" },
        ].compactMap { $0 }
        if !validation.isEmpty { summary.append(("validation", validation.joined(separator: ", "))) }
        let speed = [
            state.samplesPerSecond.map { "\(Self.count($0)) samples/s" },
            state.secondsRemaining.map { "\(Self.duration($0)) left" },
            state.rankStepSeconds.map { "step per rank \(Self.milliseconds($0))" },
        ].compactMap { $0 }
        if !speed.isEmpty { summary.append(("speed", speed.joined(separator: ", "))) }
        // The learning rate and seed are configured values: shown exactly as a config would spell them.
        summary.append(("learning rate", "\(state.learningRate)"))
        if let seed = state.progress.seed { summary.append(("seed", "\(seed)")) }
        lines += Self.keyValues(summary, indent: "  ")

        if !state.layers.isEmpty {
            lines.append("layers")
            lines += Self.table(
                header: ["#", "layer", "weight norm", "gradient norm", "saturation"],
                rows: state.layers.map { layer in
                    [
                        "\(layer.index)", layer.title, Self.number(layer.weightNorm), Self.number(layer.gradientNorm),
                        layer.saturation.map(Self.percent) ?? "-",
                    ]
                },
                rightAligned: [true, false, true, true, true])
        }

        if let sampled = state.sampledLines, !sampled.isEmpty {
            // A line the model drew that it trained on is marked: a memorized line is no sign of learning.
            let new = sampled.filter { !$0.inTraining }.count
            lines.append("samples (\(new) of \(sampled.count) new; * in the training lines)")
            lines += sampled.map { "  \($0.inTraining ? "*" : " ") \($0.text.isEmpty ? "(empty line)" : $0.text)" }
        }

        if let row = state.neuron {
            lines.append("neuron")
            lines += Self.keyValues(
                [
                    ("input x", "\(row.input)"), ("weight w", "\(row.weight)"), ("bias b", "\(row.bias)"),
                    ("target t", "\(row.target)"), ("net", "\(row.net)"), ("output", "\(row.output)"),
                    ("error", "\(row.error)"), ("loss", "\(row.loss)"),
                    ("dL/doutput", "\(row.outputGradient)"), ("dL/dnet = dL/db", "\(row.netGradient)"),
                    ("dL/dw", "\(row.weightGradient)"), ("dL/dx", "\(row.inputGradient)"),
                ], indent: "  ")
        }

        if let check = state.gradientCheck {
            lines.append("gradient check  \(check.passed ? "PASS" : "FAIL")  max relative error \(Self.number(check.maxRelativeError))")
            for tensor in check.failingTensors {
                lines.append(
                    "  failing \(tensor.name): \(Self.count(tensor.failures)) of \(Self.count(tensor.checked)) entries "
                        + "out of tolerance, max relative error \(Self.number(tensor.maxRelativeError))")
            }
        }

        lines.append("ignored events  \(Self.count(state.ignoredEventCount))")
        for ignored in state.ignoredEvents {
            lines.append("  \(ignored.event) while \(ignored.phase)")
        }
        return lines.joined(separator: "\n")
    }

    /// What `neuron train` prints when a run ends with its files written (finished or stopped): the
    /// title, phase, epochs, steps, time and seed; the losses and accuracies; the neuron's trained
    /// output; the run directory, and for a stopped run how to resume it, started as `invocation`
    /// says (`swift run neuron …` for a binary SwiftPM built). Nil for a run that diverged or
    /// failed, which says so on standard error instead.
    public func endOfRun(_ end: RunEnd, directory: String, configPath: String, invocation: Invocation = .installed) -> String? {
        guard let summary = end.summary else { return nil }
        let state = end.state
        let epochs = "\(state.progress.epoch) epoch\(state.progress.epoch == 1 ? "" : "s")"
        let seed = state.progress.seed.map { " (seed \($0))" } ?? ""
        var lines = [
            "\(state.title): \(state.phaseText) after \(epochs), \(state.progress.step) steps in \(String(format: "%.1f", summary.trainingSeconds)) s"
                + (summary.segmentSeconds.map { " (\(String(format: "%.1f", $0)) s of it in this segment)" } ?? "") + seed
        ]
        if let loss = summary.trainingLoss { lines.append("  training loss        \(loss)") }
        // Without test rows the final evaluation is on the validation rows and prints their accuracy itself.
        if let accuracy = state.validationAccuracy, summary.evaluatedOn != "validation" {
            lines.append("  validation accuracy  \(accuracy)")
        }
        if let products = summary.products { lines.append("  products             \(products)") }
        if let measure = summary.validationMeasure { lines.append("  validation           \(measure)") }
        if let name = summary.evaluatedOn, let loss = summary.evaluationLoss {
            let unit = summary.lossUnit.map { "  (\($0))" } ?? ""
            lines.append("  \(name) loss \(String(repeating: " ", count: max(0, 15 - name.count)))\(loss)\(unit)")
            if let accuracy = summary.evaluationAccuracy {
                lines.append("  \(name) accuracy \(String(repeating: " ", count: max(0, 11 - name.count)))\(accuracy)")
            }
        }
        if let bits = summary.bitsPerCharacter, !bits.isEmpty {
            let parts = ["training", "validation", "test"].compactMap { part in bits[part].map { "\(part) \(Self.number($0))" } }
            lines.append("  bits per character   \(parts.joined(separator: ", "))")
        }
        if let output = summary.trainedOutput, let w = summary.trainedWeight, let b = summary.trainedBias {
            lines.append("  trained output       \(output)  (w \(w), b \(b))")
        }
        if let sampled = state.sampledLines, sampled.count == 1, sampled[0].text.contains("\n") {
            // A document model's passage, drawn from a newline: its lines as they came.
            lines.append("  sample               a passage drawn from a newline")
            lines += sampled[0].text.split(separator: "\n", omittingEmptySubsequences: false).map { "    \($0)" }
        } else if let sampled = state.sampledLines, !sampled.isEmpty {
            let new = sampled.filter { !$0.inTraining }.count
            lines.append("  samples              \(new) of \(sampled.count) new (* a training line)")
            lines += sampled.map { "    \($0.inTraining ? "*" : " ") \($0.text)" }
        }
        lines.append("  run directory        \(directory)  (checkpoint.safetensors, metrics.csv, curves.svg, summary.json)")
        if state.phase == .stopped, let checkpoint = summary.checkpoint {
            lines.append("  stopped: checkpoint written to \(checkpoint)")
            lines.append("  resume with: \(invocation.commandLine(["train", configPath, "--resume", directory]))")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// `--json`'s last line when a run ends with its files written: `summary.json`'s object on one line.
    public func endOfRunJSON(_ end: RunEnd) -> String? {
        guard let summary = end.summary, let data = try? summary.json(with: end.state) else { return nil }
        return String(decoding: data, as: UTF8.self) + "\n"
    }

    /// One JSON object on one line, for `--json` progress: the state's `TrainingViewState.Extent.progress`
    /// encoding, keys `phase` (plus `divergedStep` and `divergedAt`, or `failure`), `title`, `epoch`,
    /// `totalEpochs`, `step`, `totalSteps`, `loss`, `smoothedLoss`, `validationLoss`,
    /// `validationAccuracy`, `samplesPerSecond`, `secondsRemaining`, `rankStepSeconds`,
    /// `learningRate`, `seed`, `ignoredEventCount`; nil values left out.
    ///
    /// Numbers are written at full round-trip precision; NaN and infinities as strings
    /// (`TrainingViewState.decoder()` reads the line back).
    public func jsonLine(_ state: TrainingViewState) -> String {
        // Cannot throw: strings, integers and Doubles, with the non-finite ones written as strings.
        String(decoding: try! TrainingViewState.encoder(.progress).encode(state), as: UTF8.self)
    }
}

// MARK: - Formatting

// Display-only numbers; independent of the locale (String(format:) without a locale uses ".").
extension ProgressRenderer {
    /// A loss-like number to 4 decimals, `0.4123`; scientific below 1e-3 in magnitude, `1.23e-05`.
    static func number(_ x: Double) -> String {
        if x.isNaN { return "nan" }
        if x.isInfinite { return x < 0 ? "-inf" : "inf" }
        if x != 0, abs(x) < 1e-3 { return String(format: "%.2e", x) }
        return String(format: "%.4f", x)
    }

    /// A count with thousands separators, `1,234,567`.
    /// Each process's step time: `0.41 | 0.43 ms`.
    static func milliseconds(_ seconds: [Double]) -> String {
        seconds.map { String(format: "%.3g", $0 * 1000) }.joined(separator: " | ") + " ms"
    }

    static func count(_ n: Int) -> String {
        let digits = Array(String(n.magnitude))
        var grouped = ""
        for (i, digit) in digits.enumerated() {
            if i > 0, (digits.count - i) % 3 == 0 { grouped.append(",") }
            grouped.append(digit)
        }
        return n < 0 ? "-" + grouped : grouped
    }

    /// A rate or count measured as a Double, rounded to a whole number: `52,340`.
    static func count(_ x: Double) -> String {
        guard x.isFinite else { return number(x) }
        guard abs(x) < 1e18 else { return String(format: "%.3e", x) }  // beyond Int's range
        return count(Int(x.rounded()))
    }

    /// A duration to the second under a minute, `45s`; to the second under an hour, `1m 05s`;
    /// then to the minute, `2h 03m`. `?` when unknown (not finite, or negative).
    static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0 else { return "?" }
        let s = Int(min(seconds, 1e15).rounded())
        func twoDigits(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        if s < 60 { return "\(s)s" }
        if s < 3600 { return "\(s / 60)m \(twoDigits(s % 60))s" }
        return "\(count(s / 3600))h \(twoDigits(s / 60 % 60))m"
    }

    /// A share in 0...1 as a percentage to one decimal, `12.5%`.
    static func percent(_ share: Double) -> String {
        guard share.isFinite else { return number(share) }
        return String(format: "%.1f%%", share * 100)
    }

    /// `done/planned`, `done` when nothing is planned, nil when neither.
    static func progress(_ done: Int, of planned: Int) -> String? {
        if planned > 0 { return "\(count(done))/\(count(planned))" }
        return done > 0 ? count(done) : nil
    }

    /// `0.4123 (avg 0.4301)`, either part alone, or nil.
    static func losses(_ state: TrainingViewState) -> String? {
        switch (state.loss, state.smoothedLoss) {
        case let (loss?, average?): "\(number(loss)) (avg \(number(average)))"
        case let (loss?, nil): number(loss)
        case let (nil, average?): "avg \(number(average))"
        case (nil, nil): nil
        }
    }

    /// `key   value` lines with the values in one column.
    private static func keyValues(_ pairs: [(String, String)], indent: String) -> [String] {
        let width = pairs.map(\.0.count).max() ?? 0
        return pairs.map { key, value in indent + padded(key, to: width) + "  " + value }
    }

    /// A table with a header, columns two spaces apart, numbers right-aligned.
    private static func table(header: [String], rows: [[String]], rightAligned: [Bool]) -> [String] {
        let widths = header.indices.map { c in ([header] + rows).map { $0[c].count }.max() ?? 0 }
        return ([header] + rows).map { cells in
            "  "
                + cells.indices.map { c in
                    rightAligned[c] ? padded(cells[c], to: widths[c], left: true) : padded(cells[c], to: widths[c])
                }.joined(separator: "  ").trimmingTrailingSpaces()
        }
    }

    private static func padded(_ s: String, to width: Int, left: Bool = false) -> String {
        let padding = String(repeating: " ", count: max(0, width - s.count))
        return left ? padding + s : s + padding
    }
}

private extension String {
    func trimmingTrailingSpaces() -> String {
        var s = self
        while s.last == " " { s.removeLast() }
        return s
    }
}
