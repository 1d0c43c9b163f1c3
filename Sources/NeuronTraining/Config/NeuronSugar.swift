// A document run's `training.steps` is sugar too: its epochs are its evaluation intervals,
// `steps / evaluateEvery` of them, each `evaluateEvery` steps long.
//
// `model.neuron` is sugar. The single neuron of Docs/Reference.md §1–3 is the network
// `Network[Dense(1→1, tanh)]` under half the squared error, started at the neuron's weight and
// bias and trained in Double by plain gradient steps on its one sample: one step an epoch, so
// `training.iterations` is its name for epochs. A config keeps the sugar as written (a run saves
// it so, and its checkpoints stay byte for byte the neuron's); `desugared` is what a run is built
// from, so that past this file nothing asks whether the model is the neuron.

extension RunConfig {
    /// This config as the network engine trains it: a neuron config as the one-unit network it
    /// is, any other config as it stands.
    public var desugared: RunConfig {
        if let steps = training.steps {
            // A document run's epochs are its evaluation intervals.
            var config = self
            config.training.epochs = steps / (training.evaluateEvery ?? TrainingConfig.defaultEvaluateEvery(steps: steps))
            return config
        }
        guard let neuron = model.neuron else { return self }
        var config = self
        config.model = ModelConfig(inputs: 1, layers: [LayerConfig(units: 1, activation: .tanh)], loss: .halfSquaredError)
        config.model.startingParameters = [neuron.weight, neuron.bias]
        config.training.epochs = training.iterations ?? training.epochs
        config.training.iterations = nil
        config.training.batchSize = 1
        config.training.precision = .double
        return config
    }
}
