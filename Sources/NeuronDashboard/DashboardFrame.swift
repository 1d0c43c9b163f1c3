// State out: one JSON object per frame, everything the page draws, built from the same
// `TrainingViewState` the terminal line shows. The view state holds each layer's numbers at the
// last snapshot; the curves of those numbers over the run are kept here, in `LayerHistory`.
import Foundation
import NeuronCore
import NeuronTraining

/// A layer's shape as the page needs it: which units can be clicked, which weights are filters.
public struct LayerLayout: Sendable, Equatable, Codable {
    /// `Dense(784→256, tanh)`.
    public var title: String
    /// Units of a dense layer (each can be explained); nil for other layers.
    public var units: Int?
    /// The weight tensor's shape (`[inputs, outputs]` for a dense layer; a rank-4 weight is drawn
    /// as filters, `[kh, kw, in, out]`); nil for a layer without weights.
    public var weightShape: [Int]?

    public init(title: String, units: Int?, weightShape: [Int]?) {
        (self.title, self.units, self.weightShape) = (title, units, weightShape)
    }
}

/// One layer's numbers along the run, at most `capacity` points: when full, every other point goes.
public struct LayerHistory: Sendable, Equatable, Codable {
    public private(set) var steps: [Int] = []
    public private(set) var weightNorms: [Double] = []
    public private(set) var gradientNorms: [Double] = []
    /// The saturation share, or -1 where the layer has none.
    public private(set) var saturations: [Double] = []
    /// The most points kept.
    public let capacity: Int

    public init(capacity: Int = 256) { self.capacity = max(2, capacity) }

    /// Adds the layer's numbers at `step` (a step already recorded last is replaced).
    public mutating func append(step: Int, _ layer: LayerViewState) {
        if steps.last == step { removeLast() }
        steps.append(step)
        weightNorms.append(layer.weightNorm)
        gradientNorms.append(layer.gradientNorm)
        saturations.append(layer.saturation ?? -1)
        guard steps.count > capacity else { return }
        // Keep the even points: the curve keeps its shape at half the resolution.
        func halve<T>(_ values: inout [T]) { values = values.enumerated().filter { $0.offset % 2 == 0 }.map(\.element) }
        halve(&steps)
        halve(&weightNorms)
        halve(&gradientNorms)
        halve(&saturations)
    }

    private mutating func removeLast() {
        steps.removeLast()
        weightNorms.removeLast()
        gradientNorms.removeLast()
        saturations.removeLast()
    }
}

/// What the page receives: a ``TrainingViewState`` as JSON, with the layers' curves.
public struct DashboardFrame: Sendable, Encodable {
    public struct Layer: Sendable, Encodable {
        public var index: Int
        public var title: String
        public var weightNorm: Double
        /// ‖∂L/∂w‖ of the last step; nil when there is none (see ``DashboardFrame/gradientNote``).
        public var gradientNorm: Double?
        public var saturation: Double?
        public var layout: LayerLayout?
        public var history: LayerHistory
        public var gradientCheck: [GradientCheckReport.TensorResult]
    }

    public struct Ignored: Sendable, Encodable {
        public var event: String
        public var phase: String
    }

    public struct NeuronRow: Sendable, Encodable {
        public var input, weight, bias, target, net, output, error, loss: Double
        public var outputGradient, netGradient, weightGradient, inputGradient: Double
    }

    /// `idle`, `running`, `paused`, `finished`, `stopped`, `diverged` or `failed`.
    public var phase: String
    /// The phase in words, with a divergence's step or a failure's message.
    public var phaseText: String
    /// Where the frame comes from: `live` (a run training) or `files` (a run directory).
    public var source: String
    public var title: String
    public var epoch: Int, totalEpochs: Int, step: Int, totalSteps: Int
    public var loss: Double?, smoothedLoss: Double?
    public var validationLoss: Double?, validationAccuracy: Double?
    public var samplesPerSecond: Double?, secondsRemaining: Double?
    public var learningRate: Double
    /// As a string: a UInt64 does not survive JavaScript's numbers.
    public var seed: String
    public var lossSteps: [Int], lossValues: [Double]
    /// At most ``recordLimit`` of the run's epoch records, chosen by `EpochRecord.bounded(_:limit:)`.
    public var records: [EpochRecord]
    /// The epochs the run has records of (`records` may hold fewer).
    public var recordCount: Int
    public var layers: [Layer]
    public var gradientCheck: GradientCheckReport?
    public var ignoredEvents: [Ignored]
    public var ignoredEventCount: Int
    public var neuron: NeuronRow?
    /// Whether the view model holds the engine (not running): explanations and weights can be read.
    public var engineAvailable: Bool
    /// The names of the ``controls`` whose events the view model accepts now: the page enables
    /// those buttons and no others.
    public var acceptedEvents: [String]
    /// Why the layers carry no ‖∂L/∂w‖, when they do not.
    public var gradientNote: String?

    /// The page's controls: the name each button posts and the event it stands for (a step's
    /// count does not change whether a step is accepted).
    public static let controls: [(name: String, event: TrainingEvent)] = [
        ("start", .start), ("pause", .pause), ("resume", .resume), ("stop", .stop), ("reset", .reset),
        ("step", .step(count: 1)), ("checkGradients", .checkGradients),
    ]

    /// The frame of `state`, with the layers' `layouts` and `histories` (by layer index).
    /// - Parameter acceptedEvents: the names of the ``controls`` the view model accepts in `state`.
    public init(
        _ state: TrainingViewState, source: String, layouts: [LayerLayout], histories: [LayerHistory], engineAvailable: Bool,
        acceptedEvents: [String]
    ) {
        phase =
            switch state.phase {
            case .idle: "idle"
            case .running: "running"
            case .paused: "paused"
            case .finished: "finished"
            case .stopped: "stopped"
            case .diverged: "diverged"
            case .failed: "failed"
            }
        phaseText = state.phase.description
        self.source = source
        title = state.title
        (epoch, totalEpochs, step, totalSteps) = (state.epoch, state.totalEpochs, state.step, state.totalSteps)
        (loss, smoothedLoss, validationLoss, validationAccuracy) = (state.loss, state.smoothedLoss, state.validationLoss, state.validationAccuracy)
        (samplesPerSecond, secondsRemaining, learningRate, seed) = (
            state.samplesPerSecond, state.secondsRemaining, state.learningRate, state.seed.map { "\($0)" } ?? "none"
        )
        // A run read from its files, or one that has not stepped, has gradient buffers of zeros:
        // not the gradient of anything.
        gradientNote =
            source == "files"
            ? "a checkpoint holds the weights, not a step's gradient"
            : state.step == 0 ? "no step taken yet" : nil
        let gradientsKnown = gradientNote == nil
        lossSteps = state.lossHistory.points.map(\.step)
        lossValues = state.lossHistory.points.map(\.loss)
        records = EpochRecord.bounded(state.records, limit: Self.recordLimit)
        recordCount = state.records.count
        layers = state.layers.map { layer in
            Layer(
                index: layer.index, title: layer.title, weightNorm: layer.weightNorm, gradientNorm: gradientsKnown ? layer.gradientNorm : nil,
                saturation: layer.saturation, layout: layouts.indices.contains(layer.index) ? layouts[layer.index] : nil,
                history: histories.indices.contains(layer.index) ? histories[layer.index] : LayerHistory(),
                gradientCheck: layer.gradientCheck.map(\.inFileLayout))
        }
        // Shapes and positions as the checkpoint's tensors of these names hold them.
        gradientCheck = state.gradientCheck?.inFileLayout()
        ignoredEvents = state.ignoredEvents.map { Ignored(event: $0.event.description, phase: $0.phase.description) }
        ignoredEventCount = state.ignoredEventCount
        neuron = state.neuron.map {
            NeuronRow(
                input: $0.input, weight: $0.weight, bias: $0.bias, target: $0.target, net: $0.net, output: $0.output,
                error: $0.error, loss: $0.loss, outputGradient: $0.outputGradient, netGradient: $0.netGradient,
                weightGradient: $0.weightGradient, inputGradient: $0.inputGradient)
        }
        self.engineAvailable = engineAvailable
        self.acceptedEvents = acceptedEvents
    }

    /// The most epoch records a frame carries: a frame stays under about 100 KB of records
    /// however long the run (each record is about 170 bytes of JSON).
    public static let recordLimit = 500

    /// The frame as JSON; NaN and infinities (a diverged run) as the strings `"NaN"`, `"Infinity"`, `"-Infinity"`.
    public func json() -> Data {
        // Cannot throw: plain values, the non-finite ones written as strings.
        try! DashboardJSON.encoder.encode(self)
    }
}

/// The one JSON encoding of the dashboard's answers.
enum DashboardJSON {
    static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
        return encoder
    }
}
