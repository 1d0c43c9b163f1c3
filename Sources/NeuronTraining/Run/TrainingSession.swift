// A run from start to end: the view model trains, a view watches it (the terminal's progress, a
// test's observer), and the session, on the main actor, writes the run directory from what the
// view model publishes: metrics and curves from the completed epochs' records in its state,
// checkpoints from the copies of the engine it keeps at checkpoint epochs. The training thread
// writes nothing. The phase the run ends in decides what is written last and the exit status;
// what the end looks like on a screen is the view's business (`NeuronTerminal`).
import Foundation
import NeuronCore
import Observation

/// How a run ended: its exit status, the final state as a summary shows it, and what only the end knows.
public struct RunEnd: Sendable {
    /// 0 finished, 130 stopped (checkpoint written), 1 diverged, failed, or stopped because a file
    /// of the run directory could not be written (the disk is full).
    public var status: Int32
    /// The final state, with the speed over the whole run and no time left.
    public var state: TrainingViewState
    /// What `summary.json` holds; nil when the run diverged or failed (no summary is written).
    public var summary: RunSummary?
}

/// Trains a run, watching it through its view model, and leaves the run directory complete.
@MainActor
public final class TrainingSession {
    /// A view of the run: watches the view model until the run ends, and returns its final state.
    public typealias View = @MainActor (any TrainingViewModeling) async -> TrainingViewState

    public let outputs: RunOutputs
    /// The config's path, for the resume hint.
    public let configPath: String
    /// How `neuron` was started, so that the resume hint starts it the same way.
    public var invocation = Invocation.installed
    /// The processes training the run together (the ranks under `mpirun`), for the summary.
    public var processes = 1
    /// Where failures are said (standard error): a divergence, a write the disk refused.
    private let writeError: @MainActor (String) -> Void
    private var stopRequested: (@MainActor () -> Void)?
    /// Called with the run's view model before it starts, and a way to read its engine at a step
    /// boundary (nil while a run owns it): where a second view, such as the browser dashboard, binds.
    /// What it throws ends the run before its first step.
    public var onViewModel:
        (@MainActor (_ model: any TrainingViewModeling, _ engine: @escaping @MainActor () -> (any TrainingEngine)?) async throws -> Void)?
    /// When metrics and curves were last written, and how many epochs they held.
    private var lastEpochFiles: (at: ContinuousClock.Instant, epochs: Int)?
    /// When the last checkpoint was written (or the run started), and at which epoch.
    private var lastCheckpoint: (at: ContinuousClock.Instant, epoch: Int?) = (.now, nil)
    /// The newest epoch end kept but not yet written (checkpoints by time skip some).
    private var unwritten: (any TrainingEngine)?
    /// The first write that failed: the run stops at it rather than go on without checkpoints.
    private var writeFailure: (any Error)?

    public init(
        outputs: RunOutputs, configPath: String,
        writeError: @escaping @MainActor (String) -> Void = { FileHandle.standardError.write(Data($0.utf8)) }
    ) {
        (self.outputs, self.configPath, self.writeError) = (outputs, configPath, writeError)
    }

    /// The view that shows nothing: it waits for the run's end, and calls `onState` with each
    /// state observed on the way.
    public static func watch(
        _ model: some TrainingViewModeling, onState: @MainActor (TrainingViewState) -> Void = { _ in }
    ) async -> TrainingViewState {
        var last = model.viewState
        for await state in Observations({ model.viewState }) {
            last = state
            onState(state)
            if state.phase.endsRun { break }
        }
        return last
    }

    /// Asks the run to stop at the end of its current step (Ctrl-C).
    public func stop() { stopRequested?() }

    /// Trains `run` to its end, shown by `view`, and writes what the end calls for.
    public func train(_ run: Run, view: View = { await TrainingSession.watch($0) }) async throws -> RunEnd {
        try await train(run.engine, of: run, view: view)
    }

    private func train<Engine: TrainingEngine>(_ engine: Engine, of run: Run, view: View) async throws -> RunEnd {
        // By time (the default), every epoch end is kept and the writer picks the newest when due.
        // The writer writes only the newest epoch end it takes, so the model holds no more than that one.
        let model = TrainingViewModel(
            engine: engine, epochEndsEvery: run.config.output.checkpointEvery ?? 1, keepingOnlyNewestEpochEnd: true, agreesToStop: run.agreesToStop)
        stopRequested = { model.handle(event: .stop) }
        defer { stopRequested = nil }
        (lastEpochFiles, lastCheckpoint, unwritten, writeFailure) = (nil, (.now, nil), nil, nil)
        let epochFiles = Task { @MainActor in
            for await _ in Observations({ (model.viewState.records.count, model.epochEnds.count) }) where !Task.isCancelled {
                self.writeEpochFiles(model.takeEpochEnds(), records: model.viewState.records, of: run)
                // Once: a stop the view model ignores (it has stopped) changes its state, which
                // would wake this loop again, for ever.
                if self.writeFailure != nil, model.viewState.phase == .running { model.handle(event: .stop) }
            }
        }
        try await onViewModel?(model, { model.engine })
        let started = ContinuousClock.now
        model.handle(event: .start)
        let final = await view(model)
        let seconds = (ContinuousClock.now - started).seconds
        // Every epoch end of the run was published before its final state: what the writer has not
        // taken yet is still in the model, and is taken here once the writer is done.
        epochFiles.cancel()
        await epochFiles.value
        let pending = model.takeEpochEnds()
        guard let ended = model.engine else { return RunEnd(status: 1, state: final) }
        if let writeFailure {
            // The disk refused a write: stop there, keeping the last checkpoint that was written.
            let kept = lastCheckpoint.epoch.map { "the checkpoint of epoch \($0)" } ?? "its checkpoint from before this run"
            let resume = invocation.commandLine(["train", configPath, "--resume", outputs.directory])
            writeError(
                "neuron: \(writeFailure)\nneuron: training stopped at epoch \(ended.epoch); \(outputs.directory) keeps \(kept); make room, then resume with: \(resume)\n"
            )
            return RunEnd(status: 1, state: final)
        }

        let checkpoint = Checkpoint(ended, config: run.config, preprocessing: run.preprocessing, overrides: run.overrides, data: run.data)
        // The summary shows the final state with the speed over the whole run, and no time left.
        var shown = final
        (shown.samplesPerSecond, shown.secondsRemaining) = (seconds > 0 ? Double(ended.stepsTaken * ended.samplesPerStep) / seconds : nil, nil)
        var summary = RunSummary(
            precision: checkpoint.state.precision.rawValue, blas: BLAS.summary, trainingSeconds: run.earlierSeconds + seconds)
        if run.config.training.products == .bf16 { summary.products = BLAS.bf16Summary }
        if run.earlierSeconds > 0 { summary.segmentSeconds = seconds }
        summary.trainingLoss = ended.records.last?.trainingLoss
        summary.processes = processes
        summary.lossUnit = RunSummary.lossUnit(unit: run.config.data.unit, vocabulary: checkpoint.state.vocabulary)
        if run.config.data.unit == .document {
            let training = run.config.training
            summary.validationMeasure =
                training.evaluation == .estimate
                ? "estimate at each evaluation, the mean over \(training.evaluationBatches ?? 20) batches of \(training.batchSize) windows drawn at random; the final loss is exact"
                : "exact: every validation character once, in consecutive windows of the block"
        }
        if let row = final.neuron {
            (summary.trainedWeight, summary.trainedBias, summary.trainedOutput) = (row.weight, row.bias, row.output)
        }

        switch final.phase {
        case .finished, .stopped:
            // The final checkpoint replaces any pending one: it is the same file, later.
            try outputs.writeMetrics(ended.records)
            try outputs.writeCurves(ended.records, title: ended.title)
            try outputs.writeCheckpoint(checkpoint)
            summary.checkpoint = outputs.path("checkpoint.safetensors")
            if final.phase == .finished, let (name, evaluation) = try ended.finalEvaluation() {
                (summary.evaluatedOn, summary.evaluationLoss, summary.evaluationAccuracy) = (name, evaluation.loss, evaluation.accuracy)
            }
            // One number per name: when the final evaluation is the validation part's (exact, where
            // a document run estimated it at each interval), it is the validation loss too.
            if summary.evaluatedOn == "validation" {
                (summary.validationLoss, summary.validationAccuracy) = (summary.evaluationLoss, summary.evaluationAccuracy)
            } else if let last = ended.records.last, last.step == ended.stepsTaken, last.validationLoss != nil {
                (summary.validationLoss, summary.validationAccuracy) = (last.validationLoss, last.validationAccuracy)
            } else if final.phase == .finished, let validation = try ended.validationEvaluation() {
                (summary.validationLoss, summary.validationAccuracy) = (validation.loss, validation.accuracy)
            }
            if let ratios = shown.tokensPerCharacter {
                summary.tokensPerCharacter = ratios
                var bits: [String: Double] = [:]
                let losses = [
                    ("training", summary.trainingLoss), ("validation", summary.validationLoss), (summary.evaluatedOn ?? "", summary.evaluationLoss),
                ]
                for case let (part, loss?) in losses { bits[part] = ratios.bitsPerCharacter(loss, over: part) }
                summary.bitsPerCharacter = bits
            }
            try outputs.writeSummary(summary, state: shown)
            // Finite weights can still give non-finite scores (a table of -inf, weights near
            // Float's limit): the files are kept, but the run is not a success.
            let finals = [(summary.evaluatedOn ?? "test", summary.evaluationLoss), ("validation", summary.validationLoss)]
            if let (name, loss) = finals.compactMap({ name, loss in loss.map { (name, $0) } }).first(where: { !$0.1.isFinite }) {
                writeError(
                    "neuron: the final \(name) loss is \(loss), not a finite number: the trained model gives non-finite scores; \(outputs.directory) keeps its files for a look\n"
                )
                return RunEnd(status: 1, state: shown, summary: summary)
            }
            return RunEnd(status: final.phase == .finished ? 0 : 130, state: shown, summary: summary)
        default:
            // Diverged or failed: the run directory keeps the last good epoch end (the diverged
            // step never completes an epoch), written now if the writer had not got to it.
            writeEpochFiles(pending, records: final.records, of: run, checkpointNow: true)
            if let writeFailure { writeError("neuron: \(writeFailure)\n") }
            writeError("neuron: training \(final.phaseText); the run directory keeps what was written before (\(outputs.directory))\n")
            return RunEnd(status: 1, state: final)
        }
    }

    /// Writes what the epochs completed so far call for: a checkpoint of the newest engine kept,
    /// when one is due (every kept engine with `checkpointEvery`; otherwise once
    /// `checkpointSeconds` have passed since the last), with metrics and curves; otherwise metrics
    /// and curves when epochs were added, at most every 2 s (each write is fsync'd, which costs
    /// more than a small epoch). Each checkpoint replaces the one before, so of several kept only
    /// the newest is written; `checkpointNow` writes it whether due or not (after a divergence,
    /// the last good epoch end). After a failed write nothing more is written.
    private func writeEpochFiles<Engine: TrainingEngine>(_ kept: [Engine], records: [EpochRecord], of run: Run, checkpointNow: Bool = false) {
        guard writeFailure == nil else { return }
        let now = ContinuousClock.now
        if let last = kept.last { unwritten = last }
        let checkpointDue =
            checkpointNow || run.config.output.checkpointEvery != nil
            || now - lastCheckpoint.at >= .seconds(run.config.output.checkpointSeconds)
        let newest = checkpointDue ? unwritten : nil
        // Snapshots and epoch ends arrive separately: the newest kept engine may be an epoch past the state's records.
        let records = unwritten.map { $0.records.count > records.count ? $0.records : records } ?? records
        if newest == nil {
            guard records.count > (lastEpochFiles?.epochs ?? 0), lastEpochFiles.map({ now - $0.at >= .seconds(2) }) ?? true else { return }
        }
        lastEpochFiles = (now, records.count)
        do {
            try outputs.writeMetrics(records)
            try outputs.writeCurves(records, title: run.engine.title)
            if let newest {
                try outputs.writeCheckpoint(
                    Checkpoint(newest, config: run.config, preprocessing: run.preprocessing, overrides: run.overrides, data: run.data))
                (lastCheckpoint, unwritten) = ((now, newest.epoch), nil)
            }
        } catch {
            writeFailure = error
        }
    }
}
