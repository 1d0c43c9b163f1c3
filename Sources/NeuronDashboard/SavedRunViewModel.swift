// A run that is not training any more, shown from its directory: the checkpoint (the network, the
// run state), metrics.csv (which may hold epochs written after the last checkpoint) and, when the
// run ended cleanly, summary.json (how it ended). The page sees it through the same protocol as a
// live run; the only event that does anything is a gradient check on the saved weights.
import Foundation
import NeuronCore
import NeuronTraining
import Observation

/// A finished or interrupted run, read from its files, as a training view model.
@MainActor @Observable
public final class SavedRunViewModel: TrainingViewModeling {
    public private(set) var viewState: TrainingViewState
    /// The run rebuilt at its checkpoint, for gradient checks and explanations.
    @ObservationIgnored public let engine: any TrainingEngine
    /// The task of the last gradient check; tests may await it.
    @ObservationIgnored public private(set) var activity: Task<Void, Never>?

    /// The run in `directory` (or the directory of a checkpoint file).
    /// - Throws: `CheckpointError`, `RunError` or `DataError` naming the file when a file cannot be read or does not fit.
    public init(directory: String) throws {
        let saved = try Checkpoint.read(directory)
        // The saved run as it ended: its data read as it is now, changed or not (nothing is trained).
        engine = try RunBuilder.build(saved.state.config, resume: saved, dataChanged: true).engine
        let folder = (saved.file as NSString).deletingLastPathComponent
        let snapshot = engine.snapshot()
        let ended = Self.summaryState((folder as NSString).appendingPathComponent("summary.json"))
        var state = TrainingViewState(phase: ended?.phase ?? .stopped, engine: snapshot)
        // A text run's last lines, as its end wrote them (a rebuilt engine has drawn none).
        state.sampledLines = state.sampledLines ?? ended?.sampledLines
        let metricsPath = (folder as NSString).appendingPathComponent("metrics.csv")
        let metrics = try Self.records(metricsPath)
        state.records = metrics.count > snapshot.records.count ? metrics : snapshot.records
        for record in state.records { state.lossHistory.append(step: record.step, loss: record.trainingLoss) }
        if let last = state.records.last {
            (state.loss, state.smoothedLoss) = (last.trainingLoss, last.trainingLoss)
            (state.validationLoss, state.validationAccuracy) = (last.validationLoss, last.validationAccuracy)
            (state.progress.epoch, state.progress.step) = (max(state.progress.epoch, last.epoch), max(state.progress.step, last.step))
        }
        viewState = state
    }

    /// A preview child: a saved run's layers do not change.
    public func layer(_ index: Int) -> PreviewViewModel<LayerEvent, LayerViewState> {
        PreviewViewModel<LayerEvent, LayerViewState>(viewState.layer(index))
    }

    /// Only `checkGradients`: nothing trains here.
    public func accepts(_ event: TrainingEvent) -> Bool { event == .checkGradients }

    /// `checkGradients` checks the saved weights; every other event is ignored (nothing trains here).
    public func handle(event: TrainingEvent) {
        guard accepts(event) else {
            viewState.ignore(event)
            return
        }
        let engine = self.engine
        activity = Task { [weak self] in
            let result = await Task.detached(priority: .userInitiated) { Result { try engine.checkGradients() } }.value
            guard let self else { return }
            switch result {
            case let .success(report):
                self.viewState.gradientCheck = report
            case let .failure(error):
                self.viewState.fail("gradient check: \(error)")
            }
        }
    }

    /// The records of `metrics.csv`; none when the file is missing.
    /// - Throws: `RunError.invalid(_:)` naming the file and line when a line does not read.
    static func records(_ path: String) throws -> [EpochRecord] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
        var records: [EpochRecord] = []
        for (n, line) in text.split(separator: "\n").enumerated().dropFirst() {
            let cells = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            guard cells.count == 6, let epoch = Int(cells[0]), let step = Int(cells[1]), let loss = Double(cells[2]) else {
                throw RunError.invalid("\(path):\(n + 1): expected epoch,step,training_loss,training_accuracy,validation_loss,validation_accuracy")
            }
            records.append(
                EpochRecord(
                    epoch: epoch, step: step, trainingLoss: loss, trainingAccuracy: Double(cells[3]),
                    validationLoss: Double(cells[4]), validationAccuracy: Double(cells[5])))
        }
        return records
    }

    /// How the run ended, from `summary.json` (an encoding of the run's final state); stopped
    /// (interrupted) when there is none.
    static func phase(summaryAt path: String) -> TrainingViewState.Phase { summaryState(path)?.phase ?? .stopped }

    /// The run's final state as `summary.json` holds it; nil when there is none or it cannot be read.
    static func summaryState(_ path: String) -> TrainingViewState? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return try? TrainingViewState.decoder().decode(TrainingViewState.self, from: data)
    }
}
