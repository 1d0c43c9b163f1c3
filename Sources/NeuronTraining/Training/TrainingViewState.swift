import NeuronCore

/// Everything a display of a training run needs, as one value: an observer never sees half a step.
public struct TrainingViewState: Sendable, Equatable {
    /// Where the run is.
    public enum Phase: Sendable, Equatable, CustomStringConvertible {
        /// Built, not started.
        case idle
        /// The loop is taking steps.
        case running
        /// Stopped at a step boundary by `pause` (or after single steps); `resume` goes on.
        case paused
        /// Every planned step taken.
        case finished
        /// Ended by `stop`; `resume` still goes on.
        case stopped
        /// A loss or output turned NaN or infinite at `step`, first seen at `location`.
        case diverged(step: Int, location: String)
        /// Something went wrong that is not the numbers' fault.
        case failed(String)

        public var description: String {
            switch self {
            case .idle: "idle"
            case .running: "running"
            case .paused: "paused"
            case .finished: "finished"
            case .stopped: "stopped"
            case let .diverged(step, location): "diverged at step \(step) in \(location)"
            case let .failed(message): "failed: \(message)"
            }
        }
    }

    /// An event that meant nothing in the phase it arrived in.
    public struct IgnoredEvent: Sendable, Equatable {
        public var event: TrainingEvent
        public var phase: Phase

        public init(event: TrainingEvent, phase: Phase) { (self.event, self.phase) = (event, phase) }
    }

    /// The single neuron's row of Docs/Reference.md §1's table, shown as the engine reports it.
    public typealias NeuronRow = TrainingSnapshot.NeuronRow

    public var phase: Phase = .idle
    /// What is trained, e.g. `Network[Dense(2→4, tanh), Dense(4→1, tanh)]` or `Neuron(1 input, tanh)`.
    public var title: String = ""
    /// Epochs completed (the neuron counts each iteration as an epoch of one sample).
    public var epoch: Int = 0
    /// Epochs planned.
    public var totalEpochs: Int = 0
    /// Steps taken.
    public var step: Int = 0
    /// Steps planned.
    public var totalSteps: Int = 0
    /// The last step's batch loss.
    public var loss: Double?
    /// An exponential moving average of the batch losses (weight 0.05 on the newest).
    public var smoothedLoss: Double?
    /// The loss on the validation rows after the last completed epoch.
    public var validationLoss: Double?
    /// The accuracy on the validation rows after the last completed epoch (classification).
    public var validationAccuracy: Double?
    /// The loss along the run, decimated so that it stays small on long runs.
    public var lossHistory = LossHistory()
    /// Training samples per second over the last snapshot interval.
    public var samplesPerSecond: Double?
    /// Seconds to the last planned step at the current speed.
    public var secondsRemaining: Double?
    /// With several processes, each one's mean seconds of computing per step, rank order
    /// (``samplesPerSecond`` then counts the samples of all of them).
    public var rankStepSeconds: [Double]?
    /// The learning rate of the next step (after the schedule).
    public var learningRate: Double = 0
    /// The seed every random choice of the run flows from; nil when the run makes none (the single neuron).
    public var seed: UInt64?
    /// The last gradient check's report.
    public var gradientCheck: GradientCheckReport?
    /// One summary per layer.
    public var layers: [LayerViewState] = []
    /// The neuron's row of the reference table, when a single neuron is trained.
    public var neuron: NeuronRow?
    /// One record per completed epoch (what `metrics.csv` and `curves.svg` show).
    public var records: [EpochRecord] = []
    /// The most recent ignored events (at most 8), newest last.
    public var ignoredEvents: [IgnoredEvent] = []
    /// Every ignored event counted.
    public var ignoredEventCount: Int = 0

    public init() {}

    /// Whether the loop is taking steps.
    public var isRunning: Bool { phase == .running }
}

/// One layer's health at a snapshot.
public struct LayerViewState: Sendable, Equatable {
    /// The layer's place in the network.
    public var index: Int
    /// `Dense(784→256, tanh)`.
    public var title: String
    /// ‖w‖₂ over the layer's weights (biases excluded).
    public var weightNorm: Double
    /// ‖∂L/∂w‖₂ from the last step.
    public var gradientNorm: Double
    /// For tanh layers, the share of the last batch's outputs with |y| > 0.99 (units whose
    /// gradient has all but vanished); nil for other activations.
    public var saturation: Double?
    /// For relu layers, the share of the last batch's outputs that are 0; nil for other activations.
    public var deadShare: Double?
    /// For batch normalization, the running mean and variance averaged over channels.
    public var runningMean: Double?, runningVariance: Double?
    /// This layer's rows of the last gradient check.
    public var gradientCheck: [GradientCheckReport.TensorResult] = []

    public init(
        index: Int, title: String, weightNorm: Double, gradientNorm: Double, saturation: Double?,
        gradientCheck: [GradientCheckReport.TensorResult] = []
    ) {
        (self.index, self.title, self.weightNorm, self.gradientNorm, self.saturation, self.gradientCheck) =
            (index, title, weightNorm, gradientNorm, saturation, gradientCheck)
    }

    /// The layer as an engine's statistics describe it, with its rows of the last gradient check.
    public init(_ statistics: LayerStatistics, gradientCheck: [GradientCheckReport.TensorResult] = []) {
        self.init(
            index: statistics.index, title: statistics.title, weightNorm: statistics.weightNorm,
            gradientNorm: statistics.gradientNorm, saturation: statistics.saturation, gradientCheck: gradientCheck)
        (deadShare, runningMean, runningVariance) = (statistics.deadShare, statistics.runningMean, statistics.runningVariance)
    }
}

/// A loss curve that never holds more than `capacity` points: each point is the mean of `stride`
/// consecutive steps, and when the curve fills up, neighbours merge and the stride doubles.
public struct LossHistory: Sendable, Equatable {
    /// One point of the curve.
    public struct Point: Sendable, Equatable {
        /// The last step the point covers.
        public var step: Int
        /// The mean loss over the steps it covers.
        public var loss: Double
    }

    /// The points, oldest first.
    public private(set) var points: [Point] = []
    /// The most points kept.
    public let capacity: Int
    /// Steps per point.
    public private(set) var stride = 1
    private var pendingSum = 0.0, pendingCount = 0

    /// An empty curve of at most `capacity` points (at least 2).
    public init(capacity: Int = 512) {
        self.capacity = max(2, capacity)
        points.reserveCapacity(self.capacity)
    }

    /// Adds one step's loss. Amortised O(1), and no allocation after the first `capacity` points.
    public mutating func append(step: Int, loss: Double) {
        pendingSum += loss
        pendingCount += 1
        guard pendingCount == stride else { return }
        points.append(Point(step: step, loss: pendingSum / Double(pendingCount)))
        pendingSum = 0
        pendingCount = 0
        if points.count == capacity {
            for i in 0..<capacity / 2 {
                let a = points[2 * i], b = points[2 * i + 1]
                points[i] = Point(step: b.step, loss: (a.loss + b.loss) / 2)
            }
            points.removeLast(capacity - capacity / 2)
            stride *= 2
        }
    }
}
