// A run from start to end as the CLI shows it: the view model trains, a progress view draws it,
// epoch ends write metrics, curves and checkpoints, and the phase it ends in decides what is
// written last and the exit status.
import Foundation
import NeuronCore
import Synchronization

/// Trains a run, watching it through its view model, and leaves the run directory complete.
@MainActor
public final class TrainingSession {
    /// How progress is shown.
    public enum Style: Sendable, Equatable {
        case live, plain(every: Duration), json, quiet
    }

    public let outputs: RunOutputs
    public let style: Style
    /// The config's path, for the resume hint.
    public let configPath: String
    private let write: @MainActor (String) -> Void
    private var stopRequested: (@MainActor () -> Void)?

    public init(outputs: RunOutputs, style: Style, configPath: String, write: @escaping @MainActor (String) -> Void) {
        (self.outputs, self.style, self.configPath, self.write) = (outputs, style, configPath, write)
    }

    /// Asks the run to stop at the end of its current step (Ctrl-C).
    public func stop() { stopRequested?() }

    /// Trains `run` to its end and writes what the end calls for.
    /// - Returns: the exit status: 0 finished, 130 stopped (checkpoint written), 1 diverged or failed.
    public func train<E: RunEngine>(_ run: E) async throws -> Int32 {
        var run = run
        let outputs = self.outputs, every = run.config.output.checkpointEvery, title = run.title
        let lastWrite = Mutex(ContinuousClock.now)
        run.epochEnded = { run in
            // On the training thread, at an epoch boundary: the files describe the run up to here.
            // Checkpoints come every `checkpointEvery` epochs; metrics and curves with each one, and
            // otherwise at most every 2 s (each write is fsync'd, which costs more than a small epoch).
            let checkpoint = run.records.count % every == 0
            let now = ContinuousClock.now
            guard checkpoint || lastWrite.withLock({ now - $0 >= .seconds(2) }) else { return }
            lastWrite.withLock { $0 = now }
            do {
                try outputs.writeMetrics(run.records)
                try outputs.writeCurves(run.records, title: title)
                if checkpoint { try run.checkpoint().write(to: outputs.directory) }
            } catch {
                FileHandle.standardError.write(Data("neuron: warning: \(error)\n".utf8))
            }
        }
        let model = TrainingViewModel(engine: run)
        stopRequested = { model.handle(event: .stop) }
        defer { stopRequested = nil }
        let mode: ProgressView<TrainingViewModel<E>>.Mode = switch style {
        case .live: .live
        case let .plain(every): .plain(every: every)
        case .json: .json
        case .quiet: .quiet
        }
        let started = ContinuousClock.now
        model.handle(event: .start)
        let final = await ProgressView(model: model, mode: mode, write: write).run()
        let seconds = (ContinuousClock.now - started).seconds
        guard let ended = model.engine else { return 1 }

        var summary = RunSummary(
            title: ended.title, phase: final.phase.description, epochs: ended.epoch, steps: ended.stepsTaken, seed: ended.seed,
            precision: ended.config.model.neuron != nil ? "double" : ended.config.training.precision.rawValue, blas: BLAS.summary,
            trainingSeconds: seconds)
        summary.trainingLoss = ended.records.last?.trainingLoss
        summary.validationLoss = ended.records.last?.validationLoss
        summary.validationAccuracy = ended.records.last?.validationAccuracy
        summary.samplesPerSecond = seconds > 0 ? Double(ended.stepsTaken * ended.samplesPerStep) / seconds : nil
        if let row = final.neuron {
            (summary.trainedWeight, summary.trainedBias, summary.trainedOutput) = (row.weight, row.bias, row.output)
        }

        switch final.phase {
        case .finished, .stopped:
            try outputs.writeMetrics(ended.records)
            try outputs.writeCurves(ended.records, title: ended.title)
            try ended.checkpoint().write(to: outputs.directory)
            summary.checkpoint = outputs.path("checkpoint.safetensors")
            if final.phase == .finished, let (name, evaluation) = try ended.finalEvaluation() {
                (summary.evaluatedOn, summary.evaluationLoss, summary.evaluationAccuracy) = (name, evaluation.loss, evaluation.accuracy)
            }
            try outputs.writeSummary(summary)
            report(summary, stopped: final.phase == .stopped)
            return final.phase == .finished ? 0 : 130
        default:
            // Diverged or failed: the last good checkpoint and the files written at epoch ends stay as they are.
            write("neuron: training \(final.phase); the run directory keeps what was written before (\(outputs.directory))\n")
            return 1
        }
    }

    private func report(_ summary: RunSummary, stopped: Bool) {
        if style == .json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            write(String(decoding: (try? encoder.encode(summary)) ?? Data(), as: UTF8.self) + "\n")
            return
        }
        var lines = ["\(summary.title): \(summary.phase) after \(summary.epochs) epoch\(summary.epochs == 1 ? "" : "s"), \(summary.steps) steps in \(String(format: "%.1f", summary.trainingSeconds)) s (seed \(summary.seed))"]
        if let loss = summary.trainingLoss { lines.append("  training loss        \(loss)") }
        if let accuracy = summary.validationAccuracy { lines.append("  validation accuracy  \(accuracy)") }
        if let name = summary.evaluatedOn, let loss = summary.evaluationLoss {
            lines.append("  \(name) loss \(String(repeating: " ", count: max(0, 15 - name.count)))\(loss)")
            if let accuracy = summary.evaluationAccuracy {
                lines.append("  \(name) accuracy \(String(repeating: " ", count: max(0, 11 - name.count)))\(accuracy)")
            }
        }
        if let output = summary.trainedOutput, let w = summary.trainedWeight, let b = summary.trainedBias {
            lines.append("  trained output       \(output)  (w \(w), b \(b))")
        }
        lines.append("  run directory        \(outputs.directory)  (checkpoint.safetensors, checkpoint.json, metrics.csv, curves.svg, summary.json)")
        if stopped {
            lines.append("  stopped: checkpoint written to \(outputs.path("checkpoint.safetensors"))")
            lines.append("  resume with: neuron train \(configPath) --resume \(outputs.directory)")
        }
        write(lines.joined(separator: "\n") + "\n")
    }
}
