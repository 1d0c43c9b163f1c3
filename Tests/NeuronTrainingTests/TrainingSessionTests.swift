import Foundation
import NeuronCore
import Synchronization
import Testing

@testable import NeuronTraining

/// What a session wrote to standard error.
@MainActor
private final class Transcript {
    var text = ""
    func write(_ s: String) { text += s }
}

/// The saved tensors of a checkpoint file pair, by name.
private func savedTensors(_ directory: String) throws -> [String: SafeTensors.Entry] { try Checkpoint.read(directory).tensors }

/// The tensors a checkpoint of `engine` would hold, by name.
private func tensors<E: TrainingEngine>(of engine: E, _ run: Run) -> [String: SafeTensors.Entry] {
    Dictionary(uniqueKeysWithValues: Checkpoint(engine, config: run.config, preprocessing: run.preprocessing).tensors.map { ($0.name, $0) })
}

@Suite("TrainingSession: trains through the view model and writes the run directory on the main actor")
@MainActor
struct TrainingSessionTests {
    @Test("A finished run leaves every file, its checkpoint at the last step, and exits 0")
    func finished() async throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        let run = try RunBuilder.build(try xorConfig(epochs: 40, extra: "output: {checkpointEvery: 5}"))
        let session = TrainingSession(outputs: RunOutputs(directory: directory.path), configPath: "xor.yaml")
        let end = try await session.train(run)
        #expect(end.status == 0)
        #expect(try directory.names() == ["checkpoint.safetensors", "curves.svg", "metrics.csv", "summary.json"])
        let engine = try #require(run.engine as? NetworkTrainingEngine<Double, SGD<Double>>)
        let straight = straightRun(engine)
        let saved = try Checkpoint.read(directory.path)
        #expect(saved.state.progress.step == 40 && saved.state.records == straight.records)
        #expect(saved.tensors == tensors(of: straight, run))
        let metrics = try String(contentsOfFile: directory.file("metrics.csv"), encoding: .utf8)
        #expect(metrics.split(separator: "\n").count == 41)
        #expect(end.state.phase == .finished && end.state.progress.epoch == 40 && end.summary?.checkpoint == directory.file("checkpoint.safetensors"))
    }

    @Test("Stopped from its progress, as Ctrl-C does: exit 130, a checkpoint at that step, and resuming ends as a run that never stopped")
    func stopAndResume() async throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        let unending = try RunBuilder.build(try xorConfig(epochs: endless))
        let session = TrainingSession(outputs: RunOutputs(directory: directory.path), configPath: "xor.yaml")
        let end = try await session.train(unending) { model in
            await TrainingSession.watch(model) { state in
                if state.phase == .running, state.progress.step >= 1 { session.stop() }
            }
        }
        #expect(end.status == 130)
        let stopped = try Checkpoint.read(directory.path)
        let step = stopped.state.progress.step
        let engine = try #require(unending.engine as? NetworkTrainingEngine<Double, SGD<Double>>)
        #expect(step >= 1 && stopped.tensors == tensors(of: straightRun(engine, steps: step), unending))
        #expect(end.state.phase == .stopped && end.summary != nil)

        // Resumed with an end in sight: the numbers of a run that went there straight.
        let config = try xorConfig(epochs: step + 25)
        var resumed = try RunBuilder.build(config, resume: stopped)
        let quiet = TrainingSession(outputs: RunOutputs(directory: directory.path), configPath: "xor.yaml")
        // The first segment's time is read back from its summary; the new one gives the whole run's and the segment's.
        let first = try #require(end.summary?.trainingSeconds)
        #expect(first > 0 && end.summary?.segmentSeconds == nil)
        #expect(quiet.outputs.trainedSeconds(upTo: step) == first && quiet.outputs.trainedSeconds(upTo: step + 1) == 0)
        resumed.earlierSeconds = first  // as RunLauncher sets it
        let resumedEnd = try await quiet.train(resumed)
        #expect(resumedEnd.status == 0)
        let summary = try #require(resumedEnd.summary)
        let segment = try #require(summary.segmentSeconds)
        #expect(segment > 0 && summary.trainingSeconds == first + segment)
        let uninterrupted = straightRun(try #require(try RunBuilder.build(config).engine as? NetworkTrainingEngine<Double, SGD<Double>>))
        #expect(try savedTensors(directory.path) == tensors(of: uninterrupted, resumed))
        #expect(try Checkpoint.read(directory.path).state.records == uninterrupted.records)
    }

    @Test("A counted table records its validation loss and the processes; one whose final scores are not finite exits 1, its files kept")
    func nonFiniteFinalLoss() async throws {
        let text = "model: {layers: [{kind: embedding}]}\ndata: {kind: text, path: words-small.txt, validationSplit: 0.1}\ntraining: {fit: counts}"
        let counted = try RunBuilder.build(try config(text))
        let good = try CheckpointTestDirectory()
        defer { good.remove() }
        let session = TrainingSession(outputs: RunOutputs(directory: good.path), configPath: "counts.yaml")
        let end = try await session.train(counted)
        #expect(end.status == 0)
        let summary = try #require(end.summary)
        // No epoch was trained: the validation loss is evaluated at the end, finite, as the test's.
        #expect(summary.validationLoss.map { $0.isFinite && $0 > 0 } == true && summary.evaluationLoss?.isFinite == true)
        #expect(summary.processes == 1)
        #expect(try String(contentsOfFile: good.file("summary.json"), encoding: .utf8).contains("\"validationLoss\""))

        // Weights finite but at Float's limit: every score overflows, the losses are NaN.
        var run = try RunBuilder.build(try config(text))
        var engine = try #require(run.engine as? NetworkTrainingEngine<Float, SGD<Float>>)
        try engine.replaceState { values in for i in values.indices { values[i] = i % 2 == 0 ? 3e38 : -3e38 } }
        run.engine = engine
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        let errors = Transcript()
        let failing = TrainingSession(outputs: RunOutputs(directory: directory.path), configPath: "counts.yaml", writeError: errors.write)
        let failed = try await failing.train(run)
        #expect(failed.status == 1)
        #expect(errors.text.contains("the final test loss is inf, not a finite number"), "\(errors.text)")
        #expect(try directory.names() == ["checkpoint.safetensors", "curves.svg", "metrics.csv", "summary.json"])
    }

    @Test("A run that diverges exits 1 and keeps the checkpoint of its last completed epoch")
    func diverged() async throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        // Momentum 0.9 at 0.35 on ReLU: fine for a couple of epochs (15 steps each), then a NaN.
        let run = try RunBuilder.build(
            try config(
                """
                model: {layers: [{units: 16, activation: relu}, {units: 1, activation: identity}]}
                data: {kind: synthetic, name: sine, count: 256}
                optimizer: {kind: sgd, learningRate: 0.35, momentum: 0.9}
                training: {epochs: 50, batchSize: 16, precision: double, seed: 1}
                """))
        let errors = Transcript()
        let session = TrainingSession(outputs: RunOutputs(directory: directory.path), configPath: "sine.yaml", writeError: errors.write)
        let end = try await session.train(run)
        #expect(end.status == 1 && end.state.phase == .diverged && end.summary == nil)
        // On standard error, where a --json consumer of standard output does not parse it.
        #expect(errors.text.contains("diverged at step"))
        let saved = try Checkpoint.read(directory.path)
        try #require(saved.state.progress.epoch >= 1, "the run diverged in its first epoch: nothing to keep")
        let engine = try #require(run.engine as? NetworkTrainingEngine<Double, SGD<Double>>)
        let atEpochEnd = straightRun(engine, steps: saved.state.progress.step)
        #expect(atEpochEnd.training.batchIndex == 0 && atEpochEnd.epoch == saved.state.progress.epoch)
        #expect(saved.tensors == tensors(of: atEpochEnd, run) && saved.state.records == atEpochEnd.records)
        // The diverged epoch never completed: it is in neither the checkpoint nor the metrics.
        var further = atEpochEnd
        while !further.isFinished, further.step().isFinite {}
        #expect(further.epoch == saved.state.progress.epoch && !further.isFinished)
        #expect(
            try String(contentsOfFile: directory.file("metrics.csv"), encoding: .utf8).split(separator: "\n").count == saved.state.progress.epoch + 1)
        #expect(!FileManager.default.fileExists(atPath: directory.file("summary.json")))
    }

    @Test(
        "A checkpoint the disk refuses stops the run at once: one message naming the file and the reason, exit 1, the previous checkpoint resumable")
    func diskFull() async throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        // Long enough for three checkpoints (one per batch of epoch ends the writer takes), even when
        // the full suite's other tests hold both cores and the writer waits its turn for seconds: the
        // failure stops the run, so the length costs nothing once the third checkpoint comes.
        let config = try xorConfig(epochs: 5_000_000, extra: "output: {checkpointEvery: 1}")
        // The third checkpoint finds the disk full, before any of its bytes are written.
        let checkpoints = Mutex(0)
        var outputs = RunOutputs(directory: directory.path)
        let target = directory.file("checkpoint.safetensors")
        outputs.beforeWrite = { name in
            guard name == "checkpoint.safetensors" else { return }
            let count = checkpoints.withLock {
                $0 += 1; return $0
            }
            if count == 3 {
                throw CheckpointError.writeFailed(path: target, reason: "writing the temporary file: No space left on device")
            }
        }
        let errors = Transcript()
        let session = TrainingSession(outputs: outputs, configPath: "xor.yaml", writeError: errors.write)
        #expect(try await session.train(try RunBuilder.build(config)).status == 1)
        #expect(checkpoints.withLock { $0 } == 3, "the run went on writing after the failure")
        #expect(errors.text.contains(directory.file("checkpoint.safetensors")) && errors.text.contains("No space left on device"), "\(errors.text)")
        #expect(errors.text.components(separatedBy: "No space left").count == 2, "one message, not one per epoch: \(errors.text)")
        #expect(!FileManager.default.fileExists(atPath: directory.file("summary.json")))
        // The previous checkpoint is whole, and resuming from it goes on as a run that never failed.
        let saved = try Checkpoint.read(directory.path)
        #expect(
            errors.text.contains("keeps the checkpoint of epoch \(saved.state.progress.epoch)") && errors.text.contains("--resume \(directory.path)"))
        let resumed = try RunBuilder.build(
            try xorConfig(epochs: saved.state.progress.epoch + 3, extra: "output: {checkpointEvery: 1}"), resume: saved)
        let quiet = TrainingSession(outputs: RunOutputs(directory: directory.path), configPath: "xor.yaml")
        #expect(try await quiet.train(resumed).status == 0)
        let straight = try RunBuilder.build(try xorConfig(epochs: saved.state.progress.epoch + 3)).engine
        let uninterrupted = straightRun(try #require(straight as? NetworkTrainingEngine<Double, SGD<Double>>))
        #expect(try savedTensors(directory.path) == tensors(of: uninterrupted, resumed))
    }

    @Test("By default checkpoints follow the clock: a short run writes one, at its end, not one per epoch")
    func checkpointsByTime() async throws {
        let directory = try CheckpointTestDirectory()
        defer { directory.remove() }
        let defaults = try xorConfig(epochs: 200).output
        #expect(defaults.checkpointEvery == nil && defaults.checkpointSeconds == 30)
        // An hour rather than the default 30 s, which a loaded test machine can take for 200 epochs.
        let run = try RunBuilder.build(try xorConfig(epochs: 200, extra: "output: {checkpointSeconds: 3600}"))
        let checkpoints = Mutex(0)
        var outputs = RunOutputs(directory: directory.path)
        outputs.beforeWrite = { name in if name == "checkpoint.safetensors" { checkpoints.withLock { $0 += 1 } } }
        let session = TrainingSession(outputs: outputs, configPath: "xor.yaml")
        #expect(try await session.train(run).status == 0)
        #expect(checkpoints.withLock { $0 } == 1)
        #expect(try Checkpoint.read(directory.path).state.progress.epoch == 200)
    }
}
