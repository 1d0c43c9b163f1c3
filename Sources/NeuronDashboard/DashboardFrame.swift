// State out: one JSON object per frame, everything the page draws: the same `TrainingViewState`
// the terminal line shows, encoded whole (bounded), with what only the page needs beside it. The
// view state holds each layer's numbers at the last snapshot; the curves of those numbers over
// the run are kept here, in `LayerHistory`.
import Foundation
import NeuronCore
import NeuronTraining

/// A layer's shape as the page needs it: which units can be clicked, at which positions, which
/// weights are filters.
public struct LayerLayout: Sendable, Equatable, Codable {
    /// `Dense(784→256, tanh)`.
    public var title: String
    /// Units that can be explained: a dense layer's (over features or per position), an RNN's;
    /// nil for other layers.
    public var units: Int?
    /// The positions a unit is explained at, for a per-position dense layer or an RNN; nil for a
    /// layer over features.
    public var positions: Int?
    /// The weight tensor's shape (`[inputs, outputs]` for a dense layer; a rank-4 weight is drawn
    /// as filters, `[kh, kw, in, out]`); nil for a layer without one named `weight`.
    public var weightShape: [Int]?

    public init(title: String, units: Int?, positions: Int? = nil, weightShape: [Int]?) {
        (self.title, self.units, self.positions, self.weightShape) = (title, units, positions, weightShape)
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
    public mutating func append(step: Int, _ layer: LayerStatistics) {
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

/// What the page receives: a `TrainingViewState` as JSON (its `TrainingViewState.Extent.full`
/// encoding), with the layers' shapes and curves and what the page may do.
public struct DashboardFrame: Sendable, Encodable {
    /// The view model's state, with at most ``recordLimit`` of its epoch records (chosen by
    /// `EpochRecord.bounded(_:limit:)`) and its gradient check in the checkpoint's layout.
    public var state: TrainingViewState
    /// Where the frame comes from: `live` (a run training) or `files` (a run directory).
    public var source: String
    /// The epochs the run has records of (`state.records` may hold fewer).
    public var recordCount: Int
    /// Each layer's shape, by layer index.
    public var layouts: [LayerLayout]
    /// Each layer's numbers along the run, by layer index.
    public var histories: [LayerHistory]
    /// Whether the view model holds the engine (not running): explanations and weights can be read.
    public var engineAvailable: Bool
    /// The events the view model accepts now: the page enables those buttons and no others.
    public var acceptedEvents: [TrainingEvent.Name]
    /// Why the layers' ‖∂L/∂w‖ are not a step's gradient, when they are not: the page shows none.
    public var gradientNote: String?
    /// The line the attention panel starts with, for a text model with attention layers; nil: no panel.
    public var attentionLine: String?
    /// What a point of `state.lossHistory` stands for: `step` (a batch loss, or the mean of a few
    /// when the curve is long) for a run training, `epoch` for a run read from its files, which
    /// keep each epoch's mean loss and no step's. The page names its chart by it.
    public var lossPer: String
    /// Set on a live run's last frame, sent as its server closes for good: how the run ended.
    public var ending: Ending?

    /// How a live run ended, beyond its final state: what its summary says (the final evaluation
    /// on the test rows, the checkpoint's path).
    public struct Ending: Sendable, Equatable, Encodable {
        /// What `summary.json` holds; nil when the run diverged or failed (no summary is written).
        public var summary: RunSummary?

        public init(summary: RunSummary?) { self.summary = summary }
    }

    /// The frame of `state`, with the layers' `layouts` and `histories` (by layer index).
    /// - Parameters:
    ///   - state: the view model's state.
    ///   - source: `live` for a run training, `files` for a run directory.
    ///   - layouts: each layer's shape, by layer index.
    ///   - histories: each layer's numbers along the run, by layer index.
    ///   - engineAvailable: whether the view model holds the engine (explanations and weights can be read).
    ///   - acceptedEvents: the events the view model accepts in `state` (a step's count
    ///     does not change whether a step is accepted).
    ///   - attentionLine: the attention panel's first line; nil for a model without attention layers.
    ///   - ending: how the run ended, on a live run's last frame; nil on every other.
    public init(
        _ state: TrainingViewState, source: String, layouts: [LayerLayout], histories: [LayerHistory], engineAvailable: Bool,
        acceptedEvents: [TrainingEvent.Name], attentionLine: String? = nil, ending: Ending? = nil
    ) {
        self.state = state
        self.state.records = EpochRecord.bounded(state.records, limit: Self.recordLimit)
        // Shapes and positions as the checkpoint's tensors of these names hold them.
        self.state.gradientCheck = state.gradientCheck?.inFileLayout()
        recordCount = state.records.count
        (self.source, self.layouts, self.histories) = (source, layouts, histories)
        // A run read from its files, or one that has not stepped, has gradient buffers of zeros:
        // not the gradient of anything.
        gradientNote =
            source == "files"
            ? "a checkpoint holds the weights, not a step's gradient"
            : state.progress.step == 0 ? "no step taken yet" : nil
        self.engineAvailable = engineAvailable
        self.acceptedEvents = acceptedEvents
        self.attentionLine = attentionLine
        // `SavedRunViewModel` draws its loss curve from metrics.csv, one point per epoch.
        lossPer = source == "files" ? "epoch" : "step"
        self.ending = ending
    }

    /// The most epoch records a frame carries: a frame stays under about 100 KB of records
    /// however long the run (each record is about 170 bytes of JSON).
    public static let recordLimit = 500

    private enum CodingKeys: String, CodingKey {
        case phaseText, seed, source, recordCount, layouts, histories, engineAvailable, acceptedEvents, gradientNote, attentionLine
        case lossPer, ending
    }

    public func encode(to encoder: any Encoder) throws {
        try state.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(state.phaseText, forKey: .phaseText)
        // Over the state's number: a UInt64 does not survive JavaScript's numbers.
        try c.encode(state.progress.seed.map { "\($0)" } ?? "none", forKey: .seed)
        try c.encode(source, forKey: .source)
        try c.encode(recordCount, forKey: .recordCount)
        try c.encode(layouts, forKey: .layouts)
        try c.encode(histories, forKey: .histories)
        try c.encode(engineAvailable, forKey: .engineAvailable)
        try c.encode(acceptedEvents, forKey: .acceptedEvents)
        try c.encodeIfPresent(gradientNote, forKey: .gradientNote)
        try c.encodeIfPresent(attentionLine, forKey: .attentionLine)
        try c.encode(lossPer, forKey: .lossPer)
        try c.encodeIfPresent(ending, forKey: .ending)
    }

    /// The frame as JSON; NaN and infinities (a diverged run) as the strings `"NaN"`, `"Infinity"`, `"-Infinity"`.
    public func json() -> Data {
        // Cannot throw: plain values, the non-finite ones written as strings.
        try! TrainingViewState.encoder(.full).encode(self)
    }
}
