/// What a user can do to a training run.
public enum TrainingEvent: Sendable, Equatable, Hashable, CustomStringConvertible {
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

    public var description: String {
        switch self {
        case .start: "start"
        case .pause: "pause"
        case .resume: "resume"
        case .stop: "stop"
        case .reset: "reset"
        case let .step(count): "step(\(count))"
        case .checkGradients: "checkGradients"
        }
    }
}

/// What a user can do to one layer's view.
public enum LayerEvent: Sendable, Equatable, Hashable {
    /// Check the gradients (the parent runs the check; the layer's view shows its tensors' rows).
    case checkGradients
}
