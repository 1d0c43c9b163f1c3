// The settings given on the command line over a config's (`--epochs`, `--batch-size`,
// `--learning-rate`, `--seed`). A run's checkpoint saves them, so that `--resume DIR` alone goes
// on with the run as it was started: the same target epochs, the same learning rate. Options given
// again with `--resume` replace the saved ones and are saved in turn; the config file's own keys
// apply as the file says.

import NeuronCore

/// Settings given over a config's, as a run saves them.
public struct RunOverrides: Sendable, Equatable, Codable {
    /// Epochs to train (the single neuron's iterations, an epoch a step on its one sample).
    public var epochs: Int?
    public var batchSize: Int?
    public var learningRate: Double?
    public var seed: UInt64?

    public init(epochs: Int? = nil, batchSize: Int? = nil, learningRate: Double? = nil, seed: UInt64? = nil) {
        (self.epochs, self.batchSize, self.learningRate, self.seed) = (epochs, batchSize, learningRate, seed)
    }

    /// Whether nothing is overridden.
    public var isEmpty: Bool { self == RunOverrides() }

    /// These settings with each one `newer` gives replacing the one here.
    public func updated(with newer: RunOverrides) -> RunOverrides {
        RunOverrides(
            epochs: newer.epochs ?? epochs, batchSize: newer.batchSize ?? batchSize, learningRate: newer.learningRate ?? learningRate,
            seed: newer.seed ?? seed)
    }

    /// `config` with these settings in place of its own (epochs in place of `training.iterations`, the
    /// neuron's name for them; for a document run, `epochs` evaluation intervals: `training.steps`
    /// becomes `epochs × evaluateEvery`).
    public func applied(to config: RunConfig) -> RunConfig {
        var config = config
        if let epochs, let steps = config.training.steps {
            // A document run's epochs are its evaluation intervals: `epochs` of them, each as long as the config says.
            let every = config.training.evaluateEvery ?? TrainingConfig.defaultEvaluateEvery(steps: steps)
            (config.training.steps, config.training.evaluateEvery) = (epochs.times(every), every)
        } else if let epochs {
            (config.training.epochs, config.training.iterations) = (epochs, nil)
        }
        if let batchSize { config.training.batchSize = batchSize }
        if let learningRate { config.optimizer.learningRate = learningRate }
        if let seed { config.training.seed = seed }
        return config
    }

    /// The command-line options that give these settings: `--epochs 200 --learning-rate 0.01`.
    public var arguments: String {
        var parts: [String] = []
        if let epochs { parts.append("--epochs \(epochs)") }
        if let batchSize { parts.append("--batch-size \(batchSize)") }
        if let learningRate { parts.append("--learning-rate \(learningRate)") }
        if let seed { parts.append("--seed \(seed)") }
        return parts.joined(separator: " ")
    }
}
