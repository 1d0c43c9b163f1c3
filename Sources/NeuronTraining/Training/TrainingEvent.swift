/// What a user can do to a training run. As JSON, `{"event": "step", "count": 5}`: the body the
/// dashboard's page posts, and each ignored event in the view state.
public enum TrainingEvent: Sendable, Equatable, Hashable, Codable, CustomStringConvertible {
    /// Begin training from the idle state.
    case start
    /// Stop at the end of the current step, keeping everything to go on later.
    case pause
    /// Go on after a pause (or after a stop).
    case resume
    /// End the run at the end of the current step; it can still be resumed.
    case stop
    /// Back to the initial weights and step 0 (not while running).
    case reset
    /// Take `count` steps, then pause (only while paused or idle).
    case step(count: Int)
    /// Check every gradient against finite differences (while running: at the next step boundary).
    case checkGradients

    /// The events' names: the one spelling of each, in JSON and in messages.
    public enum Name: String, Sendable, Codable, CaseIterable {
        case start, pause, resume, stop, reset, step, checkGradients
    }

    /// The most steps one decoded `step` may ask for.
    public static let maxDecodedStepCount = 1_000_000

    /// The event `name` stands for; `count` is a step's, ignored by the others.
    public init(_ name: Name, count: Int = 1) {
        switch name {
        case .start: self = .start
        case .pause: self = .pause
        case .resume: self = .resume
        case .stop: self = .stop
        case .reset: self = .reset
        case .step: self = .step(count: count)
        case .checkGradients: self = .checkGradients
        }
    }

    /// The event's name.
    public var name: Name {
        switch self {
        case .start: .start
        case .pause: .pause
        case .resume: .resume
        case .stop: .stop
        case .reset: .reset
        case .step: .step
        case .checkGradients: .checkGradients
        }
    }

    /// `pause`, `step(5)`.
    public var description: String {
        if case let .step(count) = self { "step(\(count))" } else { name.rawValue }
    }

    private enum CodingKeys: String, CodingKey { case event, count }

    /// Reads `{"event": "step", "count": 5}`.
    /// - Throws: `DecodingError.dataCorrupted` saying what is allowed for an unknown name, or a
    ///   step's count missing or outside 1...``maxDecodedStepCount`` (a request cannot ask for more).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let text = try container.decode(String.self, forKey: .event)
        guard let name = Name(rawValue: text) else {
            let names = Name.allCases.map(\.rawValue).joined(separator: ", ")
            throw DecodingError.dataCorruptedError(
                forKey: .event, in: container, debugDescription: "unknown event '\(text)'; expected one of \(names)")
        }
        let count = try container.decodeIfPresent(Int.self, forKey: .count)
        if name == .step, count.map({ !(1...Self.maxDecodedStepCount).contains($0) }) ?? true {
            throw DecodingError.dataCorruptedError(
                forKey: .count, in: container,
                debugDescription: "step needs a count from 1 to \(Self.maxDecodedStepCount), got \(count.map(String.init) ?? "none")")
        }
        self.init(name, count: count ?? 1)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .event)
        if case let .step(count) = self { try container.encode(count, forKey: .count) }
    }
}

/// What a user can do to one layer's view.
public enum LayerEvent: Sendable, Equatable, Hashable {
    /// Check the gradients (the parent runs the check; the layer's view shows its tensors' rows).
    case checkGradients
}
