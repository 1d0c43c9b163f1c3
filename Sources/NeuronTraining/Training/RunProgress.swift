// Where a run stands, spelled once. An engine's snapshot reports it, the view state shows it, the
// resume point and the checkpoint save it: each holds one `RunProgress` and hands it on whole, so a
// counter is declared here and nowhere else above the engine.
import NeuronCore

/// Where a run stands: epochs completed and planned, steps taken and planned, and the seed.
public struct RunProgress: Sendable, Equatable {
    /// Epochs completed (the single neuron counts each step as an epoch of its one sample).
    public var epoch: Int
    /// Epochs planned.
    public var totalEpochs: Int
    /// Steps taken.
    public var step: Int
    /// Steps planned.
    public var totalSteps: Int
    /// The seed every random choice flows from; nil when the run makes none (the single neuron:
    /// given parameters, one sample).
    public var seed: UInt64?

    /// The counters from their parts; by default nothing done, nothing planned, no seed.
    public init(epoch: Int = 0, totalEpochs: Int = 0, step: Int = 0, totalSteps: Int = 0, seed: UInt64? = nil) {
        (self.epoch, self.totalEpochs, self.step, self.totalSteps, self.seed) = (epoch, totalEpochs, step, totalSteps, seed)
    }

    /// Where `engine` stands.
    public init(of engine: some TrainingEngine) {
        self.init(
            epoch: engine.epoch, totalEpochs: engine.totalEpochs, step: engine.stepsTaken, totalSteps: engine.totalSteps, seed: engine.seed)
    }
}
