// From a config to a step, in one place: `neuron train` declares its options and hands them here.
// The launcher reads the config and the checkpoint to resume, applies the command line's settings
// (a resumed run keeps those it was started with unless given again), says what a resumed run
// changes, chooses and checks the run directory, builds the run, and takes the directory's lock
// before the first write. Every check of the input (shapes, sizes, memory budget, step counts)
// happens in `ConfigLoader` and `RunBuilder.build`, which the launcher calls; nothing here trains.
import Foundation
import NeuronCore

/// A training run from its config to the moment before its first step.
public struct RunLauncher: Sendable {
    /// What `neuron train` was asked.
    public struct Request: Sendable, Equatable {
        /// The config file (`.yaml`, `.yml` or `.json`).
        public var configPath: String
        /// Settings given on the command line, each replacing the config's.
        public var given: RunOverrides
        /// The checkpoint to go on from (its run directory or file).
        public var resume: String?
        /// The run directory, in place of the config's `output.directory`.
        public var output: String?
        /// Go on from `resume` although its data files changed since it was written.
        public var dataChanged: Bool

        public init(
            configPath: String, given: RunOverrides = RunOverrides(), resume: String? = nil, output: String? = nil, dataChanged: Bool = false
        ) {
            (self.configPath, self.given, self.resume, self.output, self.dataChanged) = (configPath, given, resume, output, dataChanged)
        }
    }

    public let request: Request
    /// The checkpoint gone on from, when resuming.
    public let checkpoint: LoadedCheckpoint?
    /// The settings in force: the checkpoint's, updated with the request's.
    public let overrides: RunOverrides
    /// The config with ``overrides`` applied and its data paths absolute (the checkpoint saves it,
    /// and is read from anywhere).
    public let config: RunConfig
    /// What the resumed run does differently from the checkpoint's, one line each (empty when not resuming).
    public let changes: [String]
    /// The run directory.
    public let outputs: RunOutputs

    /// Reads the config and checkpoint of `request` and chooses the run directory: `--output`, else
    /// the checkpoint's, else `output.directory`, else `runs/<config name>`.
    /// - Throws: ``ConfigError``, ``CheckpointError`` or ``RunError`` naming the file and the place;
    ///   ``RunError/outputExists(path:)`` when a new run would replace an earlier one's files.
    public init(_ request: Request) throws {
        self.request = request
        checkpoint = try request.resume.map(Checkpoint.read)
        overrides = (checkpoint?.state.overrides ?? RunOverrides()).updated(with: request.given)
        var config = overrides.applied(to: try ConfigLoader.load(request.configPath))
        config.data = config.data.withAbsolutePaths()
        self.config = config
        changes = try checkpoint.map { try ResumeSettings.changes(from: $0, to: config) } ?? []
        let name = ((request.configPath as NSString).lastPathComponent as NSString).deletingPathExtension
        outputs = RunOutputs(directory: request.output ?? checkpoint?.path ?? config.output.directory ?? "runs/\(name)")
        if checkpoint == nil && outputs.holdsRun { throw RunError.outputExists(path: outputs.directory) }
    }

    /// The run: its engine at its first step, or at the checkpoint's. Sets the process's BLAS
    /// threads, once, to `blasThreads`, else to the config's, or to 1 when each step splits its
    /// batch over threads (`BLAS.threadCount(blasThreads:batchThreads:)`).
    public func build(blasThreads: Int? = nil) throws -> Run {
        BLAS.threadCount = BLAS.threadCount(
            blasThreads: blasThreads ?? config.training.blasThreads, batchThreads: config.training.batchThreads ?? 1)
        var run = try RunBuilder.build(config, resume: checkpoint, dataChanged: request.dataChanged)
        run.overrides = overrides
        if let checkpoint { run.earlierSeconds = RunOutputs(directory: checkpoint.path).trainedSeconds(upTo: checkpoint.state.progress.step) }
        return run
    }

    /// When `run` resumes a checkpoint with no step left: what to say (nothing to do).
    /// - Throws: ``RunError/checkpointMismatch(path:reason:)`` when the checkpoint stopped short of
    ///   its own end and the settings end before it (a smaller `--epochs`).
    public func nothingLeft(in run: Run) throws -> String? {
        guard let checkpoint, run.engine.isFinished else { return nil }
        if let error = ResumeSettings.endedBefore(checkpoint, config: config) { throw error }
        return "\(checkpoint.path) already finished its \(checkpoint.state.progress.epoch) epochs; nothing to do (give a larger --epochs to train on)"
    }

    /// Creates the run directory and takes it for this process alone, until the returned lock is
    /// released (two runs into one directory would replace each other's files); removes what
    /// killed writers left there.
    /// - Throws: ``RunError`` when the directory cannot be made or written, another process holds
    ///   it, or a run started a moment earlier has written a checkpoint there since.
    public func lock() throws -> RunDirectoryLock {
        try outputs.prepare()
        let lock = try outputs.lock()
        if checkpoint == nil && outputs.holdsRun { throw RunError.outputExists(path: outputs.directory) }
        outputs.removeStaleTemporaryFiles(lockHeld: true)
        return lock
    }
}
