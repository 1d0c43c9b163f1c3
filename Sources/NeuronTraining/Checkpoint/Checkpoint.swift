// A checkpoint: an engine at a step boundary, saved with what its run was built from, as two files
// in the run directory. `checkpoint.safetensors` holds the tensors (readable by Python's
// safetensors), `checkpoint.json` what tensors cannot say: config, position, records. Each file is
// written atomically; the safetensors header repeats the step, so a pair torn by a crash between
// the two writes is caught when read.
import Foundation
import NeuronCore

/// A checkpoint's contents: tensors for `checkpoint.safetensors`, state for `checkpoint.json`.
public struct Checkpoint: Sendable {
    public var tensors: [SafeTensors.Entry]
    public var state: CheckpointState

    public init(tensors: [SafeTensors.Entry], state: CheckpointState) {
        (self.tensors, self.state) = (tensors, state)
    }

    /// `engine` as it stands, saved with the config it was built from and the preprocessing fitted
    /// on its training rows.
    public init<Engine: TrainingEngine>(_ engine: Engine, config: RunConfig, preprocessing: Preprocessing) {
        let point = engine.resumePoint()
        tensors = point.tensors.map { SafeTensors.entry($0.name, $0.tensor) }
        state = CheckpointState(
            config: config, network: point.network, precision: Engine.Scalar.self == Float.self ? .float : .double,
            epoch: point.epoch, step: point.step, seed: point.seed, position: point.position,
            optimizerKind: config.optimizer.kind, optimizerStep: point.optimizerStep, preprocessing: preprocessing,
            classNames: point.classNames, featureNames: point.featureNames, records: point.records)
    }
}

/// The JSON half of a checkpoint: what the tensors alone cannot say.
public struct CheckpointState: Sendable, Equatable, Codable {
    /// Bumped when the layout changes.
    public var format = 1
    /// The run's config, with its data paths resolved.
    public var config: RunConfig
    /// `Network[Dense(784→256, tanh), …]`.
    public var network: String
    /// The tensors' type.
    public var precision: TrainingConfig.Precision
    public var epoch: Int
    public var step: Int
    public var seed: UInt64
    /// The epoch order, the random generator's state and the position within the epoch.
    public var position: TrainingPosition?
    /// The optimizer, and its step count; its buffers are the `optimizer.*` tensors.
    public var optimizerKind: OptimizerConfig.Kind
    public var optimizerStep: Int
    public var preprocessing: Preprocessing
    public var classNames: [String]?
    public var featureNames: [String]
    public var records: [EpochRecord]
}

/// A checkpoint read back: its state and its tensors by name.
public struct LoadedCheckpoint: Sendable {
    /// The run directory it was read from.
    public var path: String
    public var state: CheckpointState
    public var tensors: [String: SafeTensors.Entry]

    /// The tensor `name`, in `Scalar`, of the expected shape.
    /// - Throws: ``CheckpointError`` when it is missing, of another dtype or of another shape.
    public func tensor<Scalar: TensorScalar>(_ name: String, as: Scalar.Type, shape: [Int]) throws(CheckpointError) -> [Scalar] {
        guard let entry = tensors[name] else { throw .missingTensor(path: path, name: name) }
        let tensor = try entry.tensor(as: Scalar.self, source: path)
        guard tensor.shape == shape else { throw .shapeMismatch(path: path, name: name, found: tensor.shape, expected: shape) }
        return tensor.scalars
    }
}

extension Checkpoint {
    /// `checkpoint.safetensors` and `checkpoint.json` in `directory`, each written atomically
    /// (tensors first: a crash between the two leaves a pair that ``read(_:)`` rejects). The state
    /// is encoded before either file is touched, so a state that cannot be encoded leaves the
    /// previous pair whole.
    /// - Throws: ``CheckpointError/writeFailed(path:reason:)``, or an encoding error.
    public func write(to directory: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.nonConformingFloatEncodingStrategy = Self.nonFiniteEncoding
        let json = Array(try encoder.encode(state))
        let metadata = [
            "format": "neuron-\(state.format)", "network": state.network, "step": "\(state.step)",
            "epoch": "\(state.epoch)", "precision": state.precision.rawValue,
        ]
        try SafeTensors.write(tensors, metadata: metadata, to: (directory as NSString).appendingPathComponent("checkpoint.safetensors"))
        try AtomicFile.write(json, to: (directory as NSString).appendingPathComponent("checkpoint.json"))
    }

    /// A validation loss can be infinite while training goes on (a record, not a divergence); JSON
    /// has no such numbers, so they are written as strings, as the progress JSON writes them.
    static let nonFiniteEncoding = JSONEncoder.NonConformingFloatEncodingStrategy.convertToString(
        positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")

    /// Reads a checkpoint from its directory or either of its two files.
    /// - Throws: ``CheckpointError`` for a missing, truncated or corrupt file, or two files that
    ///   do not belong together.
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
            let decoder = JSONDecoder()
            decoder.nonConformingFloatDecodingStrategy = .convertFromString(positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
            state = try decoder.decode(CheckpointState.self, from: data)
        } catch {
            throw CheckpointError.corrupt(path: statePath, reason: "not a checkpoint state: \(error)")
        }
        guard metadata["step"] == "\(state.step)" else {
            throw CheckpointError.tornPair(directory: directory, stateStep: state.step, tensorsStep: metadata["step"] ?? "?")
        }
        return LoadedCheckpoint(path: directory, state: state, tensors: Dictionary(entries.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a }))
    }
}
