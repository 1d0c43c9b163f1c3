// From a config (and, to resume, a checkpoint) to a run ready to train.
import Foundation
import NeuronCore

/// What went wrong assembling a run, or its files.
public enum RunError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A checkpoint that does not belong to this config or data.
    case checkpointMismatch(path: String, reason: String)
    /// An output directory that already holds a run, which would be overwritten.
    case outputExists(path: String)
    /// Anything else, said in full.
    case invalid(String)

    public var description: String {
        switch self {
        case let .checkpointMismatch(path, reason): "\(path): cannot resume: \(reason)"
        case let .outputExists(path):
            "\(path) already holds a run (checkpoint.safetensors); resume it with --resume \(path), or choose another --output"
        case let .invalid(message): message
        }
    }
}

/// A checkpoint read back: its state and its tensors by name.
public struct LoadedCheckpoint: Sendable {
    public var path: String
    public var state: CheckpointState
    public var tensors: [String: SafeTensors.Entry]
}

extension Checkpoint {
    /// `checkpoint.safetensors` and `checkpoint.json` in `directory`, each written atomically.
    /// The safetensors header repeats the step, so a pair torn by a crash between the two
    /// writes is detected when read.
    public func write(to directory: String) throws {
        let metadata = ["format": "neuron-\(state.format)", "network": state.network, "step": "\(state.step)",
                        "epoch": "\(state.epoch)", "precision": state.precision]
        try SafeTensors.write(tensors, metadata: metadata, to: (directory as NSString).appendingPathComponent("checkpoint.safetensors"))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        try AtomicFile.write(Array(try encoder.encode(state)), to: (directory as NSString).appendingPathComponent("checkpoint.json"))
    }

    /// Reads a checkpoint from its directory or either of its two files.
    /// - Throws: ``CheckpointError`` for a missing, truncated or corrupt file, ``RunError`` when
    ///   the two files do not belong together.
    public static func read(_ path: String) throws -> LoadedCheckpoint {
        var isDirectory: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
        let directory = exists && isDirectory.boolValue ? path : (path as NSString).deletingLastPathComponent
        let tensorsPath = (directory as NSString).appendingPathComponent("checkpoint.safetensors")
        let statePath = (directory as NSString).appendingPathComponent("checkpoint.json")
        let (entries, metadata) = try SafeTensors.read(tensorsPath)
        guard let data = FileManager.default.contents(atPath: statePath) else { throw CheckpointError.fileNotFound(path: statePath) }
        let state: CheckpointState
        do {
            state = try JSONDecoder().decode(CheckpointState.self, from: data)
        } catch {
            throw CheckpointError.corrupt(path: statePath, reason: "not a checkpoint state: \(error)")
        }
        guard metadata["step"] == "\(state.step)" else {
            throw RunError.checkpointMismatch(path: directory, reason: "checkpoint.json is from step \(state.step) but checkpoint.safetensors from step \(metadata["step"] ?? "?")")
        }
        return LoadedCheckpoint(path: directory, state: state, tensors: Dictionary(entries.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a }))
    }
}

/// Builds runs from configs.
public enum RunBuilder {
    /// A run as `config` says, or, with `resume`, the run exactly where the checkpoint left it.
    /// - Throws: ``DataError``, ``NetworkError``, ``OptimizerError``, ``CheckpointError`` or
    ///   ``RunError`` saying what does not fit.
    public static func build(_ config: RunConfig, resume: LoadedCheckpoint? = nil) throws -> any RunEngine {
        if let resume, resume.state.config.model != config.model {
            throw RunError.checkpointMismatch(path: resume.path, reason: "the checkpoint's model (\(resume.state.network)) differs from the config's")
        }
        if let neuron = config.model.neuron {
            guard let input = config.data.input, let target = config.data.target else {
                throw RunError.invalid("the neuron needs data.input and data.target")
            }
            var run = NeuronRun(engine: try NeuronTrainingEngine(
                weight: neuron.weight, bias: neuron.bias, input: input, target: target,
                learningRate: config.optimizer.learningRate, iterations: config.training.iterations ?? config.training.epochs), config: config)
            if let resume {
                let weight = try tensor("layers.0.weight", of: resume, as: Double.self, shape: [1, 1])
                let bias = try tensor("layers.0.bias", of: resume, as: Double.self, shape: [1])
                try run.restore(resume.state, weight: weight[0], bias: bias[0])
            }
            return run
        }
        switch config.training.precision {
        case .float: return try network(Float.self, config, resume)
        case .double: return try network(Double.self, config, resume)
        }
    }

    private static func network<Scalar: TensorScalar>(_: Scalar.Type, _ config: RunConfig, _ resume: LoadedCheckpoint?) throws -> any RunEngine {
        let data = try RunData<Scalar>(config.data, seed: config.training.seed)
        let inputs = data.training.featureCount
        if let declared = config.model.inputs, declared != inputs {
            throw RunError.invalid("model.inputs is \(declared) but the data has \(inputs) features")
        }
        var network: Network<Scalar> = try config.model.network(inputs: inputs, seed: config.training.seed)
        guard network.outputSize == data.training.outputCount else {
            throw RunError.invalid("the last layer has \(network.outputSize) units but the data has \(data.training.outputCount) targets per sample")
        }
        if let resume {
            guard try resume.precision() == TrainingConfig.Precision(Scalar.self) else {
                throw RunError.checkpointMismatch(path: resume.path, reason: "the checkpoint is in \(resume.state.precision) precision")
            }
            guard resume.state.preprocessing == data.preprocessing else {
                throw RunError.checkpointMismatch(path: resume.path, reason: "the data's statistics differ from the checkpoint's (did the data files change?)")
            }
            try network.loadParameters(from: resume)
        }

        let batchSize = min(config.training.batchSize, data.training.count)
        let stepsPerEpoch = (data.training.count + batchSize - 1) / batchSize

        // The config's optimizer arrives as `any Optimizer<Scalar>` and is opened here, so that the
        // engine is built for its concrete type (`NetworkRun<Scalar, SGD<Scalar>>`).
        func run<O: Optimizer>(_ fresh: O) throws -> any RunEngine where O.Scalar == Scalar {
            var optimizer = fresh
            let engine: NetworkTrainingEngine<Scalar, O>
            if let resume, let position = resume.state.position {
                var state: [String: [Scalar]] = [:]
                for (name, entry) in resume.tensors where name.hasPrefix("optimizer.") {
                    state[String(name.dropFirst("optimizer.".count))] = try entry.tensor(as: Scalar.self, source: resume.path).scalars
                }
                try optimizer.restore(state: state, step: resume.state.optimizerStep)
                engine = try NetworkTrainingEngine(
                    network: network, optimizer: optimizer, dataset: data.training, validation: data.validation, test: data.test,
                    epochs: config.training.epochs, seed: config.training.seed, position: position, records: resume.state.records)
            } else {
                engine = try NetworkTrainingEngine(
                    network: network, optimizer: optimizer, dataset: data.training, validation: data.validation, test: data.test,
                    batchSize: batchSize, epochs: config.training.epochs, seed: config.training.seed)
            }
            return NetworkRun(engine: engine, config: config, preprocessing: data.preprocessing)
        }
        return try run(config.optimizer.optimizer(Scalar.self, stepsPerEpoch: stepsPerEpoch, epochs: config.training.epochs))
    }

    /// A named tensor of a checkpoint, in `Scalar`, of the expected shape.
    static func tensor<Scalar: TensorScalar>(_ name: String, of checkpoint: LoadedCheckpoint, as: Scalar.Type, shape: [Int]) throws -> [Scalar] {
        guard let entry = checkpoint.tensors[name] else { throw CheckpointError.missingTensor(path: checkpoint.path, name: name) }
        let tensor = try entry.tensor(as: Scalar.self, source: checkpoint.path)
        guard tensor.shape == shape else {
            throw CheckpointError.shapeMismatch(path: checkpoint.path, name: name, found: tensor.shape, expected: shape)
        }
        return tensor.scalars
    }
}
