import ArgumentParser
import Foundation
import NeuronCore
import NeuronDashboard
import NeuronDistributed
import NeuronTraining
import Synchronization

/// `neuron train CONFIG`: trains as the config says, showing progress, leaving a run directory.
struct Train: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Train a network (or the single neuron) from a YAML or JSON config.",
        discussion: """
            Writes checkpoint.safetensors (tensors and run state in one file), metrics.csv, curves.svg and \
            summary.json to the run directory. Ctrl-C (SIGINT), SIGTERM and SIGHUP finish the current step, \
            write a checkpoint and exit 128 + the signal (130, 143, 129); --resume goes on from it with \
            exactly the numbers of an uninterrupted run.

            Under `mpirun -np N` (a neuron built with `--traits MPI`), N processes train the one model, each \
            on its share of every batch (training.batchSize stays the whole batch); rank 0 shows progress and \
            writes the run directory.
            """)

    @Argument(help: "The config file (.yaml, .yml or .json).")
    var config: String

    @Option(help: "Epochs to train (overrides training.epochs, and the neuron's training.iterations: an epoch of its one sample is one step).")
    var epochs: Int?

    @Option(name: .customLong("batch-size"), help: "Samples per step (overrides training.batchSize).")
    var batchSize: Int?

    @Option(name: .customLong("learning-rate"), help: "Overrides optimizer.learningRate.", transform: parseNumber)
    var learningRate: Double?

    @Option(help: "The seed of every random choice (overrides training.seed).")
    var seed: UInt64?

    @Option(help: "The run directory (overrides output.directory).")
    var output: String?

    @Option(
        help:
            "Go on from this checkpoint (its run directory or checkpoint file), with the --epochs, --batch-size, --learning-rate and --seed the run was started with unless given again."
    )
    var resume: String?

    @Flag(help: "Print the summary only.")
    var quiet = false

    @Flag(help: "Print one JSON object per state update, then a summary object.")
    var json = false

    @Flag(help: "Serve a live dashboard of the run in the browser; its address, with a token, is printed at start.")
    var dashboard = false

    @Option(help: "The dashboard's port (0: any free port).")
    var port: Int = 0

    @Option(help: "The dashboard's address (default loopback only; another address exposes the run to the network).")
    var host: String = "127.0.0.1"

    func validate() throws {
        if quiet && json { throw ValidationError("--quiet and --json exclude each other") }
        if let epochs, epochs < 1 { throw ValidationError("--epochs must be at least 1, got \(epochs)") }
        if let batchSize, batchSize < 1 { throw ValidationError("--batch-size must be at least 1, got \(batchSize)") }
        if let learningRate, learningRate <= 0 { throw ValidationError("--learning-rate must be greater than 0, got \(learningRate)") }
        if output?.isEmpty == true { throw ValidationError("--output must name a folder, got '' (the current folder would receive the run's files)") }
        if !(0...65535).contains(port) { throw ValidationError("--port must be 0 to 65535, got \(port)") }
        if !dashboard && (port != 0 || host != "127.0.0.1") { throw ValidationError("--port and --host need --dashboard") }
    }

    @MainActor
    func run() async throws {
        // Under mpirun: this process's place among those training the run (nil alone).
        let group = try ProcessGroup.start()
        let checkpoint = try resume.map(Checkpoint.read)
        // Resumed, the run goes on with the options it was started with, unless given again.
        let given = RunOverrides(epochs: epochs, batchSize: batchSize, learningRate: learningRate, seed: seed)
        let overrides = (checkpoint?.state.overrides ?? RunOverrides()).updated(with: given)
        var config = overrides.applied(to: try ConfigLoader.load(self.config))
        // Absolute: the checkpoint saves the config, and is read from anywhere.
        config.data = config.data.withAbsolutePaths()
        if let checkpoint {
            let changes = try ResumeSettings.changes(from: checkpoint, to: config)
            for line in changes where (group?.rank ?? 0) == 0 { FileHandle.standardError.write(Data("neuron: \(line)\n".utf8)) }
        }
        let name = ((self.config as NSString).lastPathComponent as NSString).deletingPathExtension
        let directory = output ?? checkpoint?.path ?? config.output.directory ?? "runs/\(name)"
        let outputs = RunOutputs(directory: directory)
        if checkpoint == nil && outputs.holdsRun { throw RunError.outputExists(path: directory) }
        BLAS.threadCount = config.training.blasThreads
        // Under mpirun the launcher's OPENBLAS_NUM_THREADS (one per rank on one machine) wins over the
        // config's count, which is one process's.
        if group != nil, let threads = ProcessInfo.processInfo.environment["OPENBLAS_NUM_THREADS"].flatMap({ Int($0) }), threads >= 1 {
            BLAS.threadCount = threads
        }
        var run = try RunBuilder.build(config, resume: checkpoint)
        run.overrides = overrides
        if let group {
            try group.agree(on: ProcessGroup.fingerprint(of: run))
            try group.join(&run)
            if group.rank != 0 { trainReplica(run, in: group) }
        }
        if let checkpoint, run.engine.isFinished {
            if let error = ResumeSettings.endedBefore(checkpoint, config: config) { throw error }
            FileHandle.standardError.write(
                Data(
                    "neuron: \(checkpoint.path) already finished its \(checkpoint.state.epoch) epochs; nothing to do (give a larger --epochs to train on)\n"
                        .utf8))
            group?.end(status: 0, together: true)  // the other ranks found their replicas finished too
            return
        }

        try outputs.prepare()
        // Held until the process ends: two runs into one directory would replace each other's files.
        let lock = try outputs.lock()
        // Checked again under the lock: a run started a moment earlier may have finished since.
        if checkpoint == nil && outputs.holdsRun { throw RunError.outputExists(path: directory) }
        outputs.removeStaleTemporaryFiles(lockHeld: true)

        let style: TrainingSession.Style = json ? .json : quiet ? .quiet : isatty(STDOUT_FILENO) != 0 ? .live : .plain(every: .seconds(5))
        let session = TrainingSession(outputs: outputs, style: style, configPath: self.config, write: writeOut)
        // Ctrl-C, SIGTERM, SIGHUP: finish the current step, write a checkpoint, say where, exit 128 + the signal.
        StopSignals.onStop { _ in DispatchQueue.main.async { MainActor.assumeIsolated { session.stop() } } }
        defer { StopSignals.onStop(nil) }
        var server: DashboardServer?
        if dashboard {
            session.onViewModel = { model, engine in
                do {
                    server = try await DashboardServer.start(binding: DashboardBinding(model: model, engine: engine), host: host, port: port)
                } catch {
                    throw RunError.invalid("\(error)")
                }
                announce(server!)
            }
        }
        let status = try await session.train(run)
        await server?.stop()
        withExtendedLifetime(lock) {}
        if let group {
            // Together: every process left training at this step (the others finish, stop or diverge with it).
            let together = status == 0 || group.agreedToStop || group.lastLossDiverged
            group.end(status: status == 130 ? StopSignals.stoppedStatus : status, together: together)
        }
        if status == 130 { throw ExitCode(StopSignals.stoppedStatus) }
        if status != 0 { throw ExitCode(status) }
    }
}

/// Rank 1 and up: the replica trains in step with rank 0, shows and writes nothing, and the process
/// ends as rank 0's will (a signal asks every process to stop after the same step).
@MainActor
private func trainReplica(_ run: Run, in group: ProcessGroup) -> Never {
    let asked = Atomic<Bool>(false)
    StopSignals.onStop { _ in asked.store(true, ordering: .relaxed) }
    let end = group.trainReplica(run) { asked.load(ordering: .relaxed) }
    switch end {
    case .finished: group.end(status: 0, together: true)
    case .stopped: group.end(status: StopSignals.stoppedStatus, together: true)
    case .diverged: group.end(status: 1, together: true)
    }
}

/// Says where the dashboard is, on standard error (standard output carries the progress), and
/// warns when it listens beyond this machine.
@MainActor
func announce(_ server: DashboardServer) {
    var lines = ["neuron: dashboard at \(server.url)"]
    if !DashboardServer.isLoopback(server.host) {
        lines.append(
            "neuron: warning: the dashboard listens on \(server.host), not loopback: anyone who can reach this machine and learns the token can steer the run (the token travels unencrypted over HTTP)"
        )
    }
    FileHandle.standardError.write(Data((lines.joined(separator: "\n") + "\n").utf8))
}

// The dashboard looks into rank 0's replica, which holds the same numbers as the others.
extension DistributedEngine: InspectableEngine {
    public func layerLayouts() -> [LayerLayout] { base.layerLayouts() }
    public func layerWeights(_ index: Int) -> (shape: [Int], values: [Double])? { base.layerWeights(index) }
    public var explainableSampleCount: Int { base.explainableSampleCount }
    public func explainUnit(layer: Int, unit: Int, sample: Int) throws -> UnitExplanation {
        try base.explainUnit(layer: layer, unit: unit, sample: sample)
    }
}
