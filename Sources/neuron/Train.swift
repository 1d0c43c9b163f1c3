import ArgumentParser
import Foundation
import NeuronCore
import NeuronTraining

/// `neuron train CONFIG`: trains as the config says, showing progress, leaving a run directory.
struct Train: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Train a network (or the single neuron) from a YAML or JSON config.",
        discussion: """
            Writes checkpoint.safetensors (tensors and run state in one file), metrics.csv, curves.svg and summary.json
            to the run directory. Ctrl-C finishes the current step, writes a checkpoint and exits 130;
            --resume goes on from it with exactly the numbers of an uninterrupted run.
            """)

    @Argument(help: "The config file (.yaml, .yml or .json).")
    var config: String

    @Option(help: "Epochs to train (overrides training.epochs; for the neuron, iterations).")
    var epochs: Int?

    @Option(name: .customLong("batch-size"), help: "Samples per step (overrides training.batchSize).")
    var batchSize: Int?

    @Option(name: .customLong("learning-rate"), help: "Overrides optimizer.learningRate.", transform: parseNumber)
    var learningRate: Double?

    @Option(help: "The seed of every random choice (overrides training.seed).")
    var seed: UInt64?

    @Option(help: "The run directory (overrides output.directory).")
    var output: String?

    @Option(help: "Go on from this checkpoint (its run directory or checkpoint file).")
    var resume: String?

    @Flag(help: "Print the summary only.")
    var quiet = false

    @Flag(help: "Print one JSON object per state update, then a summary object.")
    var json = false

    func validate() throws {
        if quiet && json { throw ValidationError("--quiet and --json exclude each other") }
        if let epochs, epochs < 1 { throw ValidationError("--epochs must be at least 1, got \(epochs)") }
        if let batchSize, batchSize < 1 { throw ValidationError("--batch-size must be at least 1, got \(batchSize)") }
        if let learningRate, learningRate <= 0 { throw ValidationError("--learning-rate must be greater than 0, got \(learningRate)") }
    }

    @MainActor
    func run() async throws {
        var config = try ConfigLoader.load(self.config)
        if let epochs {
            if config.model.neuron != nil { config.training.iterations = epochs } else { config.training.epochs = epochs }
        }
        if let batchSize { config.training.batchSize = batchSize }
        if let learningRate { config.optimizer.learningRate = learningRate }
        if let seed { config.training.seed = seed }
        let checkpoint = try resume.map(Checkpoint.read)
        let name = ((self.config as NSString).lastPathComponent as NSString).deletingPathExtension
        let directory = output ?? checkpoint?.path ?? config.output.directory ?? "runs/\(name)"
        let outputs = RunOutputs(directory: directory)
        if checkpoint == nil && outputs.holdsRun { throw RunError.outputExists(path: directory) }
        try outputs.prepare()
        BLAS.threadCount = config.training.blasThreads

        let style: TrainingSession.Style = json ? .json : quiet ? .quiet : isatty(STDOUT_FILENO) != 0 ? .live : .plain(every: .seconds(5))
        let run = try RunBuilder.build(config, resume: checkpoint)
        let session = TrainingSession(outputs: outputs, style: style, configPath: self.config, write: writeOut)
        // Ctrl-C: finish the current step, write a checkpoint, say where, exit 130.
        signal(SIGINT, SIG_IGN)
        let interrupt = DispatchSource.makeSignalSource(signal: SIGINT, queue: .main)
        interrupt.setEventHandler { MainActor.assumeIsolated { session.stop() } }
        interrupt.resume()
        defer { interrupt.cancel() }
        let status = try await session.train(run)
        if status != 0 { throw ExitCode(status) }
    }
}
