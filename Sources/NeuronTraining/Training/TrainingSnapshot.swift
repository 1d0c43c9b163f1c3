// What an engine says about itself at a step boundary, in plain numbers: no display type, no file
// format. The view model turns it into its `TrainingViewState`; nothing below the view model knows
// how a run is shown.
import NeuronCore

/// An engine's report at a step boundary: progress, validation, per-layer statistics, the
/// neuron's row, the epochs completed.
public struct TrainingSnapshot: Sendable, Equatable {
    /// The single neuron's row of Docs/Reference.md §1's table, at the current parameters.
    public struct NeuronRow: Sendable, Equatable, Codable {
        public var input: Double, weight: Double, bias: Double, target: Double
        public var net: Double, output: Double, error: Double, loss: Double
        /// ∂L/∂output, ∂L/∂net (= ∂L/∂b), ∂L/∂w, ∂L/∂x.
        public var outputGradient: Double, netGradient: Double, weightGradient: Double, inputGradient: Double

        public init(
            input: Double, weight: Double, bias: Double, target: Double, net: Double, output: Double,
            error: Double, loss: Double, outputGradient: Double, netGradient: Double,
            weightGradient: Double, inputGradient: Double
        ) {
            (self.input, self.weight, self.bias, self.target) = (input, weight, bias, target)
            (self.net, self.output, self.error, self.loss) = (net, output, error, loss)
            (self.outputGradient, self.netGradient, self.weightGradient, self.inputGradient) =
                (outputGradient, netGradient, weightGradient, inputGradient)
        }
    }

    /// What is trained, e.g. `Network[Dense(2→4, tanh), Dense(4→1, tanh)]`.
    public var title: String
    /// Epochs and steps done and planned, and the seed.
    public var progress: RunProgress
    /// The learning rate of the next step.
    public var learningRate: Double
    /// The loss and accuracy on the validation rows after the last completed epoch.
    public var validationLoss: Double?, validationAccuracy: Double?
    /// One entry per layer.
    public var layers: [LayerStatistics] = []
    /// The neuron's row, when the network is the single neuron on its one sample.
    public var neuron: NeuronRow?
    /// One record per completed epoch.
    public var records: [EpochRecord]
    /// With several processes (`NeuronDistributed`), each one's mean seconds of computing per step, rank order.
    public var rankStepSeconds: [Double]?
    /// A text model's lines drawn at the last recorded epoch's end.
    public var sampledLines: [SampledLine]?
    /// A document model's tokens per character, to read its losses per character.
    public var tokensPerCharacter: TokensPerCharacter?

    /// The progress counters and records of `engine`; validation, layers and the neuron's row empty.
    public init(progressOf engine: some TrainingEngine) {
        title = engine.title
        progress = RunProgress(of: engine)
        learningRate = engine.learningRate
        records = engine.records
    }
}
