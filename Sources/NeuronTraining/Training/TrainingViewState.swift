import Foundation
import NeuronCore

/// Everything a display of a training run needs, as one value: an observer never sees half a step.
/// It is `Codable` once; the terminal line, `--json`, `summary.json` and the dashboard's frame are
/// views of it (see ``encoder(_:pretty:)``).
public struct TrainingViewState: Sendable, Equatable {
    /// Where the run is; the raw value is its name everywhere (JSON, the terminal, the page).
    public enum Phase: String, Sendable, Codable, CaseIterable {
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
        /// A loss or output turned NaN or infinite (at ``divergedStep``, first seen at ``divergedAt``).
        case diverged
        /// Something went wrong that is not the numbers' fault (``failure`` says what).
        case failed

        /// Whether the run has ended for whoever watches it: finished, stopped, diverged or failed
        /// (`resume` may still go on from stopped, but a display's run is over).
        public var endsRun: Bool {
            switch self {
            case .finished, .stopped, .diverged, .failed: true
            case .idle, .running, .paused: false
            }
        }
    }

    /// An event that meant nothing in the phase it arrived in; as JSON the event's own object with
    /// the phase added, `{"event": "step", "count": 5, "phase": "running"}`.
    public struct IgnoredEvent: Sendable, Equatable, Codable {
        public var event: TrainingEvent
        public var phase: Phase

        public init(event: TrainingEvent, phase: Phase) { (self.event, self.phase) = (event, phase) }

        private enum CodingKeys: String, CodingKey { case phase }

        public init(from decoder: any Decoder) throws {
            event = try TrainingEvent(from: decoder)
            phase = try decoder.container(keyedBy: CodingKeys.self).decode(Phase.self, forKey: .phase)
        }

        public func encode(to encoder: any Encoder) throws {
            try event.encode(to: encoder)
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(phase, forKey: .phase)
        }
    }

    /// The single neuron's row of Docs/Reference.md §1's table, shown as the engine reports it.
    public typealias NeuronRow = TrainingSnapshot.NeuronRow

    public var phase: Phase = .idle
    /// When diverged: the step whose loss or output was not finite, and where it first showed.
    public var divergedStep: Int?, divergedAt: String?
    /// When failed: what went wrong.
    public var failure: String?
    /// What is trained, e.g. `Network[Dense(2→4, tanh), Dense(4→1, tanh)]` or `Neuron(1 input, tanh)`.
    public var title: String = ""
    /// Epochs and steps done and planned, and the seed, as the engine's snapshot reports them
    /// (as JSON, their keys at the top level: `epoch`, `totalEpochs`, `step`, `totalSteps`, `seed`).
    public var progress = RunProgress()
    /// The last step's batch loss.
    public var loss: Double?
    /// An exponential moving average of the batch losses (weight 0.05 on the newest).
    public var smoothedLoss: Double?
    /// The loss on the validation rows after the last completed epoch.
    public var validationLoss: Double?
    /// The accuracy on the validation rows after the last completed epoch (classification).
    public var validationAccuracy: Double?
    /// A document model's tokens per character: its losses, nats per token, read as bits per
    /// character (``validationBitsPerCharacter``).
    public var tokensPerCharacter: TokensPerCharacter?
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
    /// The last gradient check's report.
    public var gradientCheck: GradientCheckReport?
    /// Each layer's statistics at the last snapshot.
    public var layers: [LayerStatistics] = []
    /// The neuron's row of the reference table, when a single neuron is trained.
    public var neuron: NeuronRow?
    /// One record per completed epoch (what `metrics.csv` and `curves.svg` show).
    public var records: [EpochRecord] = []
    /// A text model's lines drawn at the last recorded epoch's end, each marked when it is a training line.
    public var sampledLines: [SampledLine]?
    /// The most recent ignored events (at most 8), newest last.
    public var ignoredEvents: [IgnoredEvent] = []
    /// Every ignored event counted.
    public var ignoredEventCount: Int = 0

    public init() {}

    /// Whether the loop is taking steps.
    public var isRunning: Bool { phase == .running }

    /// A document model's validation loss in bits per character of the validation text.
    public var validationBitsPerCharacter: Double? {
        guard let loss = validationLoss else { return nil }
        return tokensPerCharacter?.bitsPerCharacter(loss, over: "validation")
    }

    /// The phase in words, with a divergence's step and place or a failure's message:
    /// `diverged at step 37 in layers.1`, `failed: could not read data/train.csv`.
    public var phaseText: String {
        switch phase {
        case .diverged: "diverged at step \(divergedStep ?? progress.step) in \(divergedAt ?? "an unknown place")"
        case .failed: failure.map { "failed: \($0)" } ?? "failed"
        default: phase.rawValue
        }
    }

    /// Ends the state in ``Phase/failed`` with `message`, in one change.
    public mutating func fail(_ message: String) {
        (phase, failure) = (.failed, message)
    }

    /// Records `event` as ignored in the current phase, in one change: the newest 8 kept, all counted.
    public mutating func ignore(_ event: TrainingEvent) {
        ignoredEvents.append(IgnoredEvent(event: event, phase: phase))
        if ignoredEvents.count > 8 { ignoredEvents.removeFirst() }
        ignoredEventCount += 1
    }

    /// Layer `index`'s view: its statistics and its rows of the last gradient check.
    public func layer(_ index: Int) -> LayerViewState {
        LayerViewState(statistics: layers[index], gradientCheck: gradientCheck?.tensors.filter { $0.layer == index } ?? [])
    }
}

// MARK: - JSON

extension TrainingViewState: Codable {
    /// How much of the state an encoding carries.
    public enum Extent: Sendable {
        /// The numbers of the terminal line, no lists: `--json` writes one line per snapshot, and
        /// a line must not grow with the run; `summary.json`.
        case progress
        /// Everything, lists included: the dashboard's frame.
        case full
    }

    /// The one JSON encoding of the state and of every view made of it: keys sorted, slashes
    /// unescaped, nil values left out, numbers at full round-trip precision, and a diverged run's
    /// NaN and infinities, which JSON cannot hold, as the strings `"NaN"`, `"Infinity"`, `"-Infinity"`.
    public static func encoder(_ extent: Extent, pretty: Bool = false) -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
        encoder.userInfo[extentKey] = extent
        return encoder
    }

    /// The decoder of what ``encoder(_:pretty:)`` writes.
    public static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
        return decoder
    }

    private static let extentKey = CodingUserInfoKey(rawValue: "TrainingViewState.Extent")!

    private enum CodingKeys: String, CodingKey {
        case phase, divergedStep, divergedAt, failure, title, epoch, totalEpochs, step, totalSteps, loss, smoothedLoss
        case validationLoss, validationAccuracy, samplesPerSecond, secondsRemaining, rankStepSeconds, learningRate, seed
        case ignoredEventCount, sampledLines, tokensPerCharacter
        // The lists, only in the full extent.
        case lossHistory, gradientCheck, layers, neuron, records, ignoredEvents
    }

    /// Reads either extent: what a progress encoding leaves out stays empty.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init()
        phase = try c.decode(Phase.self, forKey: .phase)
        (divergedStep, divergedAt, failure) = (
            try c.decodeIfPresent(Int.self, forKey: .divergedStep), try c.decodeIfPresent(String.self, forKey: .divergedAt),
            try c.decodeIfPresent(String.self, forKey: .failure)
        )
        title = try c.decode(String.self, forKey: .title)
        progress = RunProgress(
            epoch: try c.decode(Int.self, forKey: .epoch), totalEpochs: try c.decode(Int.self, forKey: .totalEpochs),
            step: try c.decode(Int.self, forKey: .step), totalSteps: try c.decode(Int.self, forKey: .totalSteps),
            seed: try c.decodeIfPresent(UInt64.self, forKey: .seed))
        (loss, smoothedLoss) = (try c.decodeIfPresent(Double.self, forKey: .loss), try c.decodeIfPresent(Double.self, forKey: .smoothedLoss))
        validationLoss = try c.decodeIfPresent(Double.self, forKey: .validationLoss)
        validationAccuracy = try c.decodeIfPresent(Double.self, forKey: .validationAccuracy)
        samplesPerSecond = try c.decodeIfPresent(Double.self, forKey: .samplesPerSecond)
        secondsRemaining = try c.decodeIfPresent(Double.self, forKey: .secondsRemaining)
        rankStepSeconds = try c.decodeIfPresent([Double].self, forKey: .rankStepSeconds)
        learningRate = try c.decode(Double.self, forKey: .learningRate)
        ignoredEventCount = try c.decode(Int.self, forKey: .ignoredEventCount)
        sampledLines = try c.decodeIfPresent([SampledLine].self, forKey: .sampledLines)
        tokensPerCharacter = try c.decodeIfPresent(TokensPerCharacter.self, forKey: .tokensPerCharacter)
        lossHistory = try c.decodeIfPresent(LossHistory.self, forKey: .lossHistory) ?? LossHistory()
        gradientCheck = try c.decodeIfPresent(GradientCheckReport.self, forKey: .gradientCheck)
        layers = try c.decodeIfPresent([LayerStatistics].self, forKey: .layers) ?? []
        neuron = try c.decodeIfPresent(NeuronRow.self, forKey: .neuron)
        records = try c.decodeIfPresent([EpochRecord].self, forKey: .records) ?? []
        ignoredEvents = try c.decodeIfPresent([IgnoredEvent].self, forKey: .ignoredEvents) ?? []
    }

    /// Writes the extent the encoder's ``encoder(_:pretty:)`` asks for (``Extent/full`` when none).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(phase, forKey: .phase)
        try c.encodeIfPresent(divergedStep, forKey: .divergedStep)
        try c.encodeIfPresent(divergedAt, forKey: .divergedAt)
        try c.encodeIfPresent(failure, forKey: .failure)
        try c.encode(title, forKey: .title)
        try c.encode(progress.epoch, forKey: .epoch)
        try c.encode(progress.totalEpochs, forKey: .totalEpochs)
        try c.encode(progress.step, forKey: .step)
        try c.encode(progress.totalSteps, forKey: .totalSteps)
        try c.encodeIfPresent(loss, forKey: .loss)
        try c.encodeIfPresent(smoothedLoss, forKey: .smoothedLoss)
        try c.encodeIfPresent(validationLoss, forKey: .validationLoss)
        try c.encodeIfPresent(validationAccuracy, forKey: .validationAccuracy)
        try c.encodeIfPresent(samplesPerSecond, forKey: .samplesPerSecond)
        try c.encodeIfPresent(secondsRemaining, forKey: .secondsRemaining)
        try c.encodeIfPresent(rankStepSeconds, forKey: .rankStepSeconds)
        try c.encode(learningRate, forKey: .learningRate)
        try c.encodeIfPresent(progress.seed, forKey: .seed)
        try c.encode(ignoredEventCount, forKey: .ignoredEventCount)
        try c.encodeIfPresent(sampledLines, forKey: .sampledLines)
        try c.encodeIfPresent(tokensPerCharacter, forKey: .tokensPerCharacter)
        guard encoder.userInfo[Self.extentKey] as? Extent != .progress else { return }
        try c.encode(lossHistory, forKey: .lossHistory)
        try c.encodeIfPresent(gradientCheck, forKey: .gradientCheck)
        try c.encode(layers, forKey: .layers)
        try c.encodeIfPresent(neuron, forKey: .neuron)
        try c.encode(records, forKey: .records)
        try c.encode(ignoredEvents, forKey: .ignoredEvents)
    }
}

/// One layer's view: its statistics at the last snapshot and its rows of the last gradient check,
/// both taken from the run's ``TrainingViewState`` (``TrainingViewState/layer(_:)``).
public struct LayerViewState: Sendable, Equatable {
    public var statistics: LayerStatistics
    public var gradientCheck: [GradientCheckReport.TensorResult]

    public init(statistics: LayerStatistics, gradientCheck: [GradientCheckReport.TensorResult] = []) {
        (self.statistics, self.gradientCheck) = (statistics, gradientCheck)
    }
}

/// A loss curve that never holds more than `capacity` points: each point is the mean of `stride`
/// consecutive steps, and when the curve fills up, neighbours merge and the stride doubles.
public struct LossHistory: Sendable, Equatable, Codable {
    /// One point of the curve.
    public struct Point: Sendable, Equatable, Codable {
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
