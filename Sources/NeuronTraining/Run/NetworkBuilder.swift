// From a config to the network and the optimizer it names, in one place: `RunBuilder` (train,
// resume, gradcheck) and `Prediction` (predict) build through these, so a saved network is
// rebuilt exactly as it was trained. A new optimizer or schedule kind is one enum case in the
// config and one case in the exhaustive switches here.
import NeuronCore

extension ModelConfig {
    /// The shape one sample enters the network with: ``inputShape`` (an image, channels last)
    /// when the model takes images, else `[features]`.
    public func sampleShape(features: Int) -> [Int] { takesImages ? (inputShape ?? [features]) : [features] }

    /// The layers this model describes for `features` per sample (a text model: positions per
    /// sequence, over a `vocabulary` of that many tokens), each built for the shape the one before
    /// it gives (a neuron config's once ``RunConfig/desugared``; a transformer's from its sizes).
    /// - Throws: ``LayerBuildError`` naming the layer whose settings do not fit the shape it receives.
    public func layers<Scalar: TensorScalar>(_: Scalar.Type = Scalar.self, features: Int, vocabulary: Int? = nil) throws(LayerBuildError)
        -> [any Layer<Scalar>]
    {
        if let transformer { return try transformer.layers(Scalar.self, time: features, vocabulary: vocabulary) }
        var shape = sampleShape(features: features)
        var built: [any Layer<Scalar>] = []
        for (i, layer) in layers.enumerated() {
            do {
                let next = try layer.layer(Scalar.self, input: shape, vocabulary: vocabulary)
                built.append(next)
                shape = next.outputShape
            } catch {
                throw LayerBuildError(index: i, key: layer.kind == .dense ? "units" : nil, error: error)
            }
        }
        return built
    }

    /// The network this model describes for `features` per sample: ``layers(_:features:vocabulary:)``, its
    /// ``effectiveLoss``, and weights drawn from `seed` (or the ``startingParameters``).
    /// - Throws: ``LayerBuildError`` for a layer that cannot be built as configured.
    public func network<Scalar: TensorScalar>(_: Scalar.Type = Scalar.self, features: Int, vocabulary: Int? = nil, seed: UInt64)
        throws(LayerBuildError) -> Network<Scalar>
    {
        let layers: [any Layer<Scalar>] = try self.layers(features: features, vocabulary: vocabulary)
        do {
            var network = try Network(layers, loss: effectiveLoss)
            network.initialize(seed: seed)
            if let transformer, transformer.initialization == .gpt2 {
                // Attention draws its output projection N(0, 0.02²); GPT-2 scales the products that
                // end a residual branch by 1/√(2·blocks): the same draws, scaled.
                let scale = Scalar(1 / (2 * Double(transformer.blocks)).squareRoot())
                for tensor in network.parameterTensors where tensor.tensor.hasSuffix("c_proj.weight") {
                    for i in tensor.offset..<tensor.offset + tensor.count { network.parameters[i] *= scale }
                }
            }
            if let start = startingParameters {
                // Desugaring writes the layers and their parameters together (the neuron's weight and bias).
                precondition(start.count == network.parameters.count, "\(start.count) starting parameters for \(network)")
                network.parameters = start.map { Scalar($0) }
            }
            return network
        } catch let .layersDoNotChain(index, _, _, _, _) {
            throw LayerBuildError(
                index: index + 1, error: .invalidLayer("\(layers[index + 1])", reason: "cannot follow \(layers[index])"),
                inTransformer: transformer != nil)
        } catch {
            throw LayerBuildError(index: layers.count - 1, error: error, inTransformer: transformer != nil)
        }
    }
}

/// A configured layer that cannot be built for the shape it receives, e.g. a 2×2 pool over a
/// 1×1 map: the layer's index in `model.layers` and what does not fit.
public struct LayerBuildError: Error, Equatable, CustomStringConvertible {
    /// The layer's index in `model.layers` (in a transformer's layers, in order).
    public var index: Int
    /// The layer's key at fault when one is (a dense layer's `units`; a transformer's `positions`).
    public var key: String? = nil
    /// What does not fit, naming the layer and the shapes.
    public var error: NetworkError
    /// Whether the layer is one a `model.transformer` builds, whose keys the path then names.
    public var inTransformer = false
    /// The config key at fault: `model.layers[2]`, `model.layers[0].units`, `model.transformer.positions`.
    public var path: String {
        (inTransformer ? "model.transformer" : "model.layers[\(index)]") + (key.map { ".\($0)" } ?? "")
    }
    public var description: String { "\(path): \(error)" }
}

extension TransformerConfig {
    /// nanoGPT's model for sequences of `time` tokens of a `vocabulary`, layer by layer:
    ///
    ///     Embedding(features) → PositionEmbedding(positions) → [Dropout]
    ///     → blocks × (Residual[LayerNorm → CausalSelfAttention(heads) → [Dropout]],
    ///                 Residual[LayerNorm → Dense(mlpRatio·features) → GELU → Dense(features) → [Dropout]])
    ///     → LayerNorm → Dense(vocabulary, identity), or the TiedHead on the embedding's table
    ///
    /// the dropouts only when `dropout` is above 0. The sizes are the loader's to check; what only
    /// the data decides is checked here.
    /// - Throws: ``LayerBuildError`` at `model.transformer` for a model without a vocabulary (not
    ///   text), at `model.transformer.positions` for a block longer than the position table.
    public func layers<Scalar: TensorScalar>(_: Scalar.Type = Scalar.self, time: Int, vocabulary: Int?) throws(LayerBuildError)
        -> [any Layer<Scalar>]
    {
        var built: [any Layer<Scalar>] = []
        func error(_ reason: String, key: String? = nil) -> LayerBuildError {
            LayerBuildError(index: built.count, key: key, error: .invalidLayer("a transformer", reason: reason), inTransformer: true)
        }
        guard let vocabulary else { throw error("reads token indices, which only text data gives") }
        if let positions, positions < time {
            throw error(
                "the block (data.blockSize, or the longest line's characters + 1) is \(time) positions, but model.transformer.positions gives the position table \(positions) rows",
                key: "positions")
        }
        let sequence = [time, features], hidden = [time, mlpRatio * features]
        do {
            // A tied table also scores the output: drawn small, as GPT-2 draws it, so the first logits are not √features in size.
            let gpt2 = initialization == .gpt2, residualDeviation = 0.02 / (2 * Double(blocks)).squareRoot()
            func dense(_ inputs: Int, _ outputs: Int, deviation: Double) throws(NetworkError) -> Dense<Scalar> {
                var layer = try Dense<Scalar>(inputs, outputs, activation: .identity, time: time)
                if gpt2 { layer.initialStandardDeviation = deviation }
                return layer
            }
            built = [
                try Embedding<Scalar>(vocabulary: vocabulary, features: features, time: time, standardDeviation: tieWeights || gpt2 ? 0.02 : 1)
            ]
            built.append(try PositionEmbedding<Scalar>(time: time, features: features, positions: positions))
            if dropout > 0 { built.append(try Dropout<Scalar>(input: sequence, rate: dropout)) }
            for _ in 0..<blocks {
                var attention: [any Layer<Scalar>] = [
                    try LayerNorm<Scalar>(shape: sequence), try CausalSelfAttention<Scalar>(time: time, features: features, heads: heads),
                ]
                var mlp: [any Layer<Scalar>] = [
                    try LayerNorm<Scalar>(shape: sequence), try dense(features, mlpRatio * features, deviation: 0.02),
                    try GELU<Scalar>(shape: hidden), try dense(mlpRatio * features, features, deviation: residualDeviation),
                ]
                if dropout > 0 {
                    attention.append(try Dropout<Scalar>(input: sequence, rate: dropout))
                    mlp.append(try Dropout<Scalar>(input: sequence, rate: dropout))
                }
                built.append(try Residual<Scalar>(attention))
                built.append(try Residual<Scalar>(mlp))
            }
            built.append(try LayerNorm<Scalar>(shape: sequence))
            if tieWeights {
                built.append(try TiedHead<Scalar>(time: time, features: features, vocabulary: vocabulary))
            } else {
                built.append(try dense(features, vocabulary, deviation: 0.02))
            }
        } catch {
            throw LayerBuildError(index: built.count, error: error, inTransformer: true)
        }
        return built
    }
}

extension LayerConfig {
    /// This layer for samples of shape `input` (tokens of a `vocabulary` for an embedding).
    /// - Throws: `NetworkError.invalidLayer(_:reason:)` for a setting that is missing or does not fit the shape.
    func layer<Scalar: TensorScalar>(_: Scalar.Type, input shape: [Int], vocabulary: Int? = nil) throws(NetworkError) -> any Layer<Scalar> {
        try kind.spec.layer(self, Scalar.self, input: shape, vocabulary: vocabulary)
    }
}

extension OptimizerConfig {
    /// The optimizer this config names, its schedule counted in steps: `epochs` epochs of
    /// `stepsPerEpoch` steps.
    /// - Parameters:
    ///   - scalar: the precision of the parameters it updates.
    ///   - stepsPerEpoch: steps in an epoch, to count the schedule in steps.
    ///   - epochs: the run's epochs.
    ///   - decayedRanges: the network's matrices (`Network.decayedRanges`), which weight
    ///     decay shrinks under `decay: matrices`.
    /// - Throws: `OptimizerError` for a hyperparameter out of range.
    public func optimizer<Scalar: TensorScalar>(
        _ scalar: Scalar.Type = Scalar.self, stepsPerEpoch: Int, epochs: Int, decayedRanges: [Range<Int>]
    ) throws(OptimizerError) -> any Optimizer<Scalar> {
        let schedule = try schedule.learningRateSchedule(stepsPerEpoch: stepsPerEpoch, epochs: epochs)
        let scope: WeightDecayScope = effectiveDecay == .matrices ? .matrices(decayedRanges) : .all
        switch kind {
        case .sgd:
            return try SGD(
                learningRate: Scalar(learningRate), momentum: Scalar(momentum), nesterov: nesterov,
                weightDecay: Scalar(weightDecay), decay: scope, schedule: schedule)
        case .adam:
            return try Adam(
                learningRate: Scalar(learningRate), beta1: Scalar(beta1), beta2: Scalar(beta2), epsilon: Scalar(epsilon),
                weightDecay: Scalar(weightDecay), decoupled: decoupled, decay: scope, schedule: schedule)
        }
    }
}

extension ScheduleConfig {
    /// The schedule in steps, for `epochs` epochs of `stepsPerEpoch` steps (the config counts
    /// epochs, its warmup steps), behind its warmup when it has one; a cosine then runs over the
    /// steps after the warmup, as nanoGPT's does.
    /// - Throws: `OptimizerError` when the steps are more than a run counts (`maximumStepCount`),
    ///   or the warmup is not shorter than the run.
    public func learningRateSchedule(stepsPerEpoch: Int, epochs: Int) throws(OptimizerError) -> LearningRateSchedule {
        func steps(_ epochs: Int, _ name: String) throws(OptimizerError) -> Int {
            guard let steps = stepCount(epochs: epochs, stepsPerEpoch: stepsPerEpoch) else {
                throw .invalidHyperparameter(
                    name: name, value: "\(epochs) epochs",
                    allowed: "at most \(maximumStepCount / max(1, stepsPerEpoch)) epochs of \(stepsPerEpoch) steps")
            }
            return steps
        }
        let warmup = warmupSteps ?? 0
        if warmup > 0 {
            let total = try steps(epochs, "the run's epochs")
            guard warmup < total else {
                throw .invalidHyperparameter(name: "warmupSteps", value: "\(warmup)", allowed: "fewer than the run's \(total) steps")
            }
        }
        let after: LearningRateSchedule
        switch kind {
        case .constant: after = .constant
        // The loader requires `every` for a step schedule.
        case .step: after = .step(every: try steps(every ?? 1, "step schedule's every"), factor: factor ?? 0.1)
        case .cosine: after = .cosine(totalSteps: try steps(epochs, "cosine schedule's epochs") - warmup, minimumFactor: minimumFactor ?? 0)
        }
        return warmup > 0 ? .warmup(steps: warmup, then: after) : after
    }
}

extension Network {
    /// Replaces every parameter, and every non-trainable state tensor, with the checkpoint's
    /// tensor of the same name (weights permuted back from the file's PyTorch layouts).
    /// - Throws: ``CheckpointError`` for a tensor that is missing or of another shape.
    mutating func loadParameters(from checkpoint: LoadedCheckpoint) throws {
        for t in parameterTensors {
            parameters.replaceSubrange(t.range, with: try checkpoint.parameter(t.name, as: Scalar.self, shape: t.shape, order: t.pytorchOrder))
        }
        for t in stateTensors {
            state.replaceSubrange(t.range, with: try checkpoint.parameter(t.name, as: Scalar.self, shape: t.shape, order: t.pytorchOrder))
        }
    }
}
