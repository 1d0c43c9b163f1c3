// What a resumed run may change from the run it goes on from. The batch size, the seed and the
// optimizer's kind are part of where the run stands (the epoch's batches, the generator, the
// optimizer's buffers): changing them is refused. The optimizer's hyperparameters (learning rate,
// momentum, schedule, weight decay's scope, gradient clipping, …) are applied from the next step,
// each change said in one line.
import Foundation
import NeuronCore

/// The settings a resume changes.
public enum ResumeSettings {
    /// One line per optimizer setting that `config` changes from the checkpoint's, naming the key
    /// and its old and new values.
    /// - Throws: ``RunError/checkpointMismatch(path:reason:)`` for a changed batch size, seed or
    ///   optimizer kind.
    public static func changes(from saved: LoadedCheckpoint, to config: RunConfig) throws(RunError) -> [String] {
        let old = saved.state.config
        func refuse(_ key: String, _ was: String, _ now: String, _ why: String) -> RunError {
            .checkpointMismatch(path: saved.path, reason: "\(key) is \(now) but the run was trained with \(was); \(why)")
        }
        if config.training.batchSize != old.training.batchSize {
            throw refuse(
                "training.batchSize", "\(old.training.batchSize)", "\(config.training.batchSize)",
                "a run goes on in its own batches (drop --batch-size, or start a new run to change it)")
        }
        if config.training.seed != old.training.seed {
            throw refuse(
                "training.seed", "\(old.training.seed)", "\(config.training.seed)",
                "the epoch order goes on from the checkpoint's generator (drop --seed, or start a new run)")
        }
        if config.optimizer.kind != old.optimizer.kind {
            throw refuse(
                "optimizer.kind", old.optimizer.kind.rawValue, config.optimizer.kind.rawValue,
                "the optimizer's state cannot carry over to another kind (start a new run)")
        }
        var lines: [String] = []
        func compare<Value: Equatable>(_ key: String, _ path: KeyPath<OptimizerConfig, Value>) {
            let (was, now) = (old.optimizer[keyPath: path], config.optimizer[keyPath: path])
            if was != now { lines.append("optimizer.\(key) changed from \(was) to \(now)") }
        }
        compare("learningRate", \.learningRate)
        compare("momentum", \.momentum)
        compare("nesterov", \.nesterov)
        compare("beta1", \.beta1)
        compare("beta2", \.beta2)
        compare("epsilon", \.epsilon)
        compare("weightDecay", \.weightDecay)
        compare("decoupled", \.decoupled)
        compare("decay", \.effectiveDecay)
        let (was, now) = (old.optimizer.schedule, config.optimizer.schedule)
        if was != now { lines.append("optimizer.schedule changed from \(describe(was)) to \(describe(now))") }
        // A cosine is counted over the run's steps: a new total bends it from the next step on.
        let (planned, planning) = (old.desugared.training.epochs, config.desugared.training.epochs)
        if now.kind == .cosine, planned != planning {
            lines.append(
                "optimizer.schedule: the cosine now runs over \(planning) epochs instead of \(planned) (--epochs), from the step the run stands at")
        }
        let (clipped, clips) = (old.training.clipGradientNorm, config.training.clipGradientNorm)
        if clipped != clips {
            lines.append("training.clipGradientNorm changed from \(clipped.map { "\($0)" } ?? "none") to \(clips.map { "\($0)" } ?? "none")")
        }
        return lines
    }

    /// What to say when `saved`, resumed as `config`, has no step left to train: nil when the
    /// checkpoint had finished its own run (nothing to do, said by the caller), else the error for
    /// a run stopped short of its end that `config` ends before it (a smaller `--epochs`).
    public static func endedBefore(_ saved: LoadedCheckpoint, config: RunConfig) -> RunError? {
        let done = saved.state.progress.epoch
        let (started, now) = (saved.state.config.desugared.training.epochs, config.desugared.training.epochs)
        guard done < started else { return nil }
        return .checkpointMismatch(
            path: saved.path,
            reason:
                "the run stopped at epoch \(done) of its \(started), and \(now) epochs end before that; give --epochs above \(done), or leave --epochs out to go on to \(started)"
        )
    }

    private static func describe(_ schedule: ScheduleConfig) -> String {
        var parts = ["kind: \(schedule.kind.rawValue)"]
        if let every = schedule.every { parts.append("every: \(every)") }
        if let factor = schedule.factor { parts.append("factor: \(factor)") }
        if let minimum = schedule.minimumFactor { parts.append("minimumFactor: \(minimum)") }
        if let warmup = schedule.warmupSteps { parts.append("warmupSteps: \(warmup)") }
        return "{" + parts.joined(separator: ", ") + "}"
    }
}

extension DataConfig {
    /// The same data with every file path absolute (resolved against `directory`), so that a
    /// checkpoint names its data wherever it is later read from.
    public func withAbsolutePaths(relativeTo directory: String = FileManager.default.currentDirectoryPath) -> DataConfig {
        func absolute(_ path: String?) -> String? {
            path.map { ($0.hasPrefix("/") ? $0 : (directory as NSString).appendingPathComponent($0) as String) }
                .map { ($0 as NSString).standardizingPath }
        }
        var data = self
        (data.path, data.trainImages, data.trainLabels) = (absolute(path), absolute(trainImages), absolute(trainLabels))
        (data.testPath, data.testImages, data.testLabels) = (absolute(testPath), absolute(testImages), absolute(testLabels))
        return data
    }
}
