// From a config to the network and the optimizer it names, in one place: `RunBuilder` (train,
// resume, gradcheck) and `Prediction` (predict) build through these, so a saved network is
// rebuilt exactly as it was trained. A new optimizer or schedule kind is one enum case in the
// config and one case in the exhaustive switches here.
import NeuronCore

extension ModelConfig {
    /// The network this model describes for `features` per sample: its dense layers (the single
    /// neuron's is one tanh unit, as its checkpoints hold it), its ``effectiveLoss``, and
    /// weights drawn from `seed`.
    /// - Throws: ``NetworkError`` for sizes out of range.
    public func network<Scalar: TensorScalar>(_: Scalar.Type = Scalar.self, features: Int, seed: UInt64) throws(NetworkError) -> Network<Scalar> {
        let layers: [(units: Int, activation: Activation)] = neuron != nil ? [(1, .tanh)] : self.layers.map { ($0.units, $0.activation) }
        return try Network(features: features, layers: layers, loss: effectiveLoss, seed: seed)
    }
}

extension OptimizerConfig {
    /// The optimizer this config names, its schedule counted in steps: `epochs` epochs of
    /// `stepsPerEpoch` steps.
    /// - Throws: ``OptimizerError`` for a hyperparameter out of range.
    public func optimizer<Scalar: TensorScalar>(_: Scalar.Type = Scalar.self, stepsPerEpoch: Int, epochs: Int) throws(OptimizerError)
        -> any Optimizer<Scalar>
    {
        let schedule = try schedule.learningRateSchedule(stepsPerEpoch: stepsPerEpoch, epochs: epochs)
        switch kind {
        case .sgd:
            return try SGD(
                learningRate: Scalar(learningRate), momentum: Scalar(momentum), nesterov: nesterov,
                weightDecay: Scalar(weightDecay), schedule: schedule)
        case .adam:
            return try Adam(
                learningRate: Scalar(learningRate), beta1: Scalar(beta1), beta2: Scalar(beta2), epsilon: Scalar(epsilon),
                weightDecay: Scalar(weightDecay), decoupled: decoupled, schedule: schedule)
        }
    }
}

extension ScheduleConfig {
    /// The schedule in steps, for `epochs` epochs of `stepsPerEpoch` steps (the config counts epochs).
    /// - Throws: ``OptimizerError`` when the steps are more than an `Int` counts.
    public func learningRateSchedule(stepsPerEpoch: Int, epochs: Int) throws(OptimizerError) -> LearningRateSchedule {
        func steps(_ epochs: Int, _ name: String) throws(OptimizerError) -> Int {
            let (product, overflow) = epochs.multipliedReportingOverflow(by: stepsPerEpoch)
            guard !overflow else {
                throw .invalidHyperparameter(
                    name: name, value: "\(epochs) epochs", allowed: "at most \(Int.max / stepsPerEpoch) epochs of \(stepsPerEpoch) steps")
            }
            return product
        }
        switch kind {
        case .constant: return .constant
        // The loader requires `every` for a step schedule.
        case .step: return .step(every: try steps(every ?? 1, "step schedule's every"), factor: factor ?? 0.1)
        case .cosine: return .cosine(totalSteps: try steps(epochs, "cosine schedule's epochs"), minimumFactor: minimumFactor ?? 0)
        }
    }
}

extension Network {
    /// Replaces every parameter, and every non-trainable state tensor, with the checkpoint's
    /// tensor of the same name (dense weights transposed back from the file's (outputs, inputs)).
    /// - Throws: ``CheckpointError`` for a tensor that is missing or of another shape.
    mutating func loadParameters(from checkpoint: LoadedCheckpoint) throws {
        for t in parameterTensors {
            parameters.replaceSubrange(t.range, with: try checkpoint.parameter(t.name, as: Scalar.self, shape: t.shape))
        }
        for t in stateTensors {
            state.replaceSubrange(t.range, with: try checkpoint.parameter(t.name, as: Scalar.self, shape: t.shape))
        }
    }
}
