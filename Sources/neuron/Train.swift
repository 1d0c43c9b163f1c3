import ArgumentParser
import Foundation
import NeuronCore
import NeuronDashboard
import NeuronDistributed
import NeuronTerminal
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

    @Flag(
        name: .customLong("data-changed"),
        help: "With --resume: go on although the data files differ from those the checkpoint was trained on (refused otherwise).")
    var dataChanged = false

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
        if dataChanged && resume == nil { throw ValidationError("--data-changed goes with --resume: a new run has no earlier data to differ from") }
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
        let launcher = try RunLauncher(
            .init(
                configPath: config, given: RunOverrides(epochs: epochs, batchSize: batchSize, learningRate: learningRate, seed: seed),
                resume: resume, output: output, dataChanged: dataChanged))
        for line in launcher.changes where (group?.rank ?? 0) == 0 { FileHandle.standardError.write(Data("neuron: \(line)\n".utf8)) }
        var run = try launcher.build(blasThreads: group == nil ? nil : ProcessGroup.blasThreads())
        if let group {
            try group.agree(on: ProcessGroup.fingerprint(of: run))
            try group.join(&run)
            if group.rank != 0 { trainReplica(run, in: group) }
        }
        for warning in run.warnings where (group?.rank ?? 0) == 0 { FileHandle.standardError.write(Data("neuron: warning: \(warning)\n".utf8)) }
        if let nothingLeft = try launcher.nothingLeft(in: run) {
            FileHandle.standardError.write(Data("neuron: \(nothingLeft)\n".utf8))
            group?.end(status: 0, together: true)  // the other ranks found their replicas finished too
            return
        }
        // Held until the process ends.
        let lock = try launcher.lock()

        let session = TrainingSession(outputs: launcher.outputs, configPath: config)
        session.invocation = .current  // the resume hint starts neuron as this process was started
        session.processes = group?.processCount ?? 1
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
        let mode: ProgressMode = json ? .json : quiet ? .quiet : isatty(STDOUT_FILENO) != 0 ? .live : .plain(every: .seconds(5))
        let end: RunEnd
        do {
            end = try await session.train(run, view: mode.view(write: writeOut))
        } catch {
            // An open page shows the run failed, rather than a run that seems to go on.
            await server?.stop(failing: "\(error)")
            throw error
        }
        let renderer = ProgressRenderer()
        if let text =
            json
            ? renderer.endOfRunJSON(end)
            : renderer.endOfRun(end, directory: launcher.outputs.directory, configPath: config, invocation: session.invocation)
        {
            writeOut(text)
        }
        // Every open page is sent the end (its test evaluation included) before the process exits.
        await server?.stop(showing: end.state, summary: end.summary)
        withExtendedLifetime(lock) {}
        if let group {
            // Together: every process left training at this step (the others finish, stop or diverge with it).
            let together = end.status == 0 || group.agreedToStop || group.lastLossDiverged
            group.end(status: end.status == 130 ? StopSignals.stoppedStatus : end.status, together: together)
        }
        if end.status == 130 { throw ExitCode(StopSignals.stoppedStatus) }
        if end.status != 0 { throw ExitCode(end.status) }
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
    public func explainUnit(layer: Int, unit: Int, sample: Int, position: Int?) throws -> UnitExplanation {
        try base.explainUnit(layer: layer, unit: unit, sample: sample, position: position)
    }
    public var attentionLine: String? { base.attentionLine }
    public func attentionMaps(text: String) throws -> AttentionMaps { try base.attentionMaps(text: text) }
}
