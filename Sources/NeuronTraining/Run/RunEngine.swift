// A run: an engine built from a config, which can save itself to a checkpoint, be rebuilt from
// one exactly where it stood, and evaluate itself at the end.
import Foundation
import NeuronCore

/// A training engine that is also a run: records per epoch, checkpoints, a final evaluation.
public protocol RunEngine: TrainingEngine {
    /// The config the run was built from.
    var config: RunConfig { get }
    /// One record per completed epoch.
    var records: [EpochRecord] { get }
    /// Called on the training thread right after each epoch's last step, with the run as it
    /// stands there; checkpoints and metrics are written from it.
    var epochEnded: (@Sendable (Self) -> Void)? { get set }
    /// Everything needed to go on from this step boundary exactly.
    func checkpoint() -> Checkpoint
    /// Loss and accuracy on the test rows (or the validation rows when there is no test set).
    func finalEvaluation() throws -> (name: String, evaluation: Evaluation)?
    /// `check` on the run's network at its current weights, over its first `batchSize` training rows.
    func gradientCheck(_ check: GradientCheck, batchSize: Int) throws -> GradientCheckReport
}

/// A checkpoint's contents: tensors for `checkpoint.safetensors`, state for `checkpoint.json`.
public struct Checkpoint: Sendable {
    public var tensors: [SafeTensors.Entry]
    public var state: CheckpointState
}

/// The JSON half of a checkpoint: what the tensors alone cannot say.
public struct CheckpointState: Sendable, Equatable, Codable {
    /// Bumped when the layout changes.
    public var format = 1
    /// The run's config, with its data paths resolved.
    public var config: RunConfig
    /// `Network[Dense(784→256, tanh), …]`.
    public var network: String
    /// `float` or `double`: the tensors' type.
    public var precision: String
    public var epoch: Int
    public var step: Int
    public var seed: UInt64
    /// The epoch order, the random generator's state and the position within the epoch.
    public var position: TrainingPosition?
    /// `sgd` or `adam`, and its step count; its buffers are the `optimizer.*` tensors.
    public var optimizerKind: String
    public var optimizerStep: Int
    public var preprocessing: Preprocessing
    public var classNames: [String]?
    public var featureNames: [String]
    public var records: [EpochRecord]
}

// MARK: - Networks

/// A network trained as a config says.
public struct NetworkRun<Scalar: TensorScalar, O: Optimizer>: RunEngine where O.Scalar == Scalar {
    public private(set) var engine: NetworkTrainingEngine<Scalar, O>
    public let config: RunConfig
    public let preprocessing: Preprocessing
    public var epochEnded: (@Sendable (NetworkRun) -> Void)?

    init(engine: NetworkTrainingEngine<Scalar, O>, config: RunConfig, preprocessing: Preprocessing) {
        (self.engine, self.config, self.preprocessing) = (engine, config, preprocessing)
    }

    public var title: String { engine.title }
    public var seed: UInt64 { engine.seed }
    public var samplesPerStep: Int { engine.samplesPerStep }
    public var stepsTaken: Int { engine.stepsTaken }
    public var totalSteps: Int { engine.totalSteps }
    public var epoch: Int { engine.epoch }
    public var totalEpochs: Int { engine.totalEpochs }
    public var learningRate: Double { engine.learningRate }
    public var records: [EpochRecord] { engine.records }
    /// The network as trained so far.
    public var network: Network<Scalar> { engine.network }

    public mutating func step() -> Double {
        let epochs = engine.records.count
        let loss = engine.step()
        if engine.records.count > epochs { epochEnded?(self) }
        return loss
    }

    public func describe(into state: inout TrainingViewState) { engine.describe(into: &state) }
    public func divergenceLocation() -> String { engine.divergenceLocation() }
    public func checkGradients() throws -> GradientCheckReport { try engine.checkGradients() }
    public func finalEvaluation() throws -> (name: String, evaluation: Evaluation)? { try engine.finalEvaluation() }

    public func gradientCheck(_ check: GradientCheck, batchSize: Int) throws -> GradientCheckReport {
        let batch = engine.training.dataset.subset(Array(0 ..< min(max(batchSize, 1), engine.training.dataset.count)))
        return try check.run(on: engine.network, inputs: batch.features, targets: batch.targets)
    }

    public func checkpoint() -> Checkpoint {
        let network = engine.network
        var tensors = network.parameterTensors.map { SafeTensors.entry($0.name, network.parameter($0)) }
        let optimizer = engine.training.optimizer
        for (name, values) in optimizer.state.sorted(by: { $0.key < $1.key }) {
            tensors.append(SafeTensors.entry("optimizer.\(name)", Tensor(vector: values)))
        }
        let position = engine.training.position
        let dataset = engine.training.dataset
        return Checkpoint(tensors: tensors, state: CheckpointState(
            config: config, network: network.description, precision: Scalar.self == Float.self ? "float" : "double",
            epoch: position.epoch, step: position.stepsTaken, seed: seed, position: position,
            optimizerKind: config.optimizer.kind.rawValue, optimizerStep: optimizer.step, preprocessing: preprocessing,
            classNames: dataset.classNames, featureNames: dataset.featureNames, records: engine.records))
    }
}

// MARK: - The neuron

/// The single neuron trained as a config says (SPEC §3's run).
public struct NeuronRun: RunEngine {
    public private(set) var engine: NeuronTrainingEngine
    public let config: RunConfig
    public private(set) var records: [EpochRecord] = []
    public var epochEnded: (@Sendable (NeuronRun) -> Void)?

    init(engine: NeuronTrainingEngine, config: RunConfig) { (self.engine, self.config) = (engine, config) }

    public var title: String { engine.title }
    public var seed: UInt64 { engine.seed }
    public var samplesPerStep: Int { 1 }
    public var stepsTaken: Int { engine.stepsTaken }
    public var totalSteps: Int { engine.totalSteps }
    public var epoch: Int { engine.epoch }
    public var totalEpochs: Int { engine.totalEpochs }
    public var learningRate: Double { engine.learningRate }

    /// Records (and the hook) every 1% of the iterations: the neuron's "epochs" are single steps.
    private var recordEvery: Int { max(1, engine.totalSteps / 100) }

    public mutating func step() -> Double {
        let loss = engine.step()
        if engine.stepsTaken % recordEvery == 0 || engine.isFinished {
            records.append(EpochRecord(epoch: engine.stepsTaken, step: engine.stepsTaken, trainingLoss: loss,
                                       trainingAccuracy: nil, validationLoss: nil, validationAccuracy: nil))
            epochEnded?(self)
        }
        return loss
    }

    public func describe(into state: inout TrainingViewState) { engine.describe(into: &state) }
    public func divergenceLocation() -> String { engine.divergenceLocation() }
    public func checkGradients() throws -> GradientCheckReport { try engine.checkGradients() }
    public func finalEvaluation() throws -> (name: String, evaluation: Evaluation)? { nil }

    /// The check runs on `Network[Dense(1→1, tanh)]` with the neuron's weight and bias, and its one sample.
    public func gradientCheck(_ check: GradientCheck, batchSize: Int) throws -> GradientCheckReport {
        var network = try Network<Double>([try Dense<Double>(1, 1, activation: .tanh)], loss: .halfSquaredError)
        network.parameters = [engine.neuron.weights[0], engine.neuron.bias]
        return try check.run(on: network, inputs: Tensor(shape: [1, 1], scalars: [engine.input]),
                             targets: Tensor(shape: [1, 1], scalars: [engine.target]))
    }

    public func checkpoint() -> Checkpoint {
        let neuron = engine.neuron
        return Checkpoint(
            tensors: [
                SafeTensors.entry("layers.0.weight", try! Tensor(shape: [1, 1], scalars: neuron.weights)),
                SafeTensors.entry("layers.0.bias", Tensor(vector: [neuron.bias])),
            ],
            state: CheckpointState(
                config: config, network: "Network[Dense(1→1, tanh)]", precision: "double",
                epoch: engine.stepsTaken, step: engine.stepsTaken, seed: 0, position: nil,
                optimizerKind: "sgd", optimizerStep: engine.stepsTaken, preprocessing: .none,
                classNames: nil, featureNames: ["x"], records: records))
    }

    /// Rebuilds the run at a checkpoint's step.
    mutating func restore(_ state: CheckpointState, weight: Double, bias: Double) throws {
        engine = try engine.restored(weight: weight, bias: bias, stepsTaken: state.step)
        records = state.records
    }
}
