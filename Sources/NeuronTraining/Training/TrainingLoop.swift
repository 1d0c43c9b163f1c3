// The training loop runs off the main actor, on its own task, owning its engine outright: no lock
// is taken inside a step. The view model reaches it only through `TrainingControl` (atomics read
// once per step), and it reaches the view model only through immutable snapshots at a bounded rate.
import NeuronCore
import Synchronization

/// How often the loop hands a snapshot of its state to the view model.
public struct SnapshotPolicy: Sendable, Equatable {
    /// At most one snapshot per interval (measured with a clock read every ~1 ms of training).
    public var interval: Duration
    /// Instead, exactly one snapshot every `everySteps` steps (deterministic; for tests and logs).
    public var everySteps: Int?

    /// At most 20 snapshots per second.
    public static let `default` = SnapshotPolicy(interval: .milliseconds(50), everySteps: nil)

    /// One snapshot every `steps` steps.
    public static func every(_ steps: Int) -> SnapshotPolicy {
        SnapshotPolicy(interval: .zero, everySteps: max(1, steps))
    }
}

/// Requests from the view model to the running loop, read at step boundaries.
final class TrainingControl: Sendable {
    static let run = 0, pause = 1, stop = 2
    /// What the loop should do after its current step: run on, pause or stop.
    let request = Atomic<Int>(TrainingControl.run)
    /// A gradient check is wanted at the next step boundary.
    let checkRequested = Atomic<Bool>(false)
}

/// What moves between the view model and a run's task: the engine, and the run's own record.
struct Session<Engine: TrainingEngine>: Sendable {
    var engine: Engine
    var history = LossHistory()
    var lastLoss: Double?
    var smoothedLoss: Double?
    var samplesPerSecond: Double?
    var secondsRemaining: Double?
    /// The latest check done by the loop at a step boundary.
    var gradientCheck: GradientCheckReport?

    init(engine: Engine) { self.engine = engine }

    mutating func record(loss: Double) {
        lastLoss = loss
        history.append(step: engine.stepsTaken, loss: loss)
        smoothedLoss = smoothedLoss.map { 0.95 * $0 + 0.05 * loss } ?? loss
    }

    /// The whole state as one value.
    func state(phase: TrainingViewState.Phase) -> TrainingViewState {
        var state = TrainingViewState()
        state.phase = phase
        state.title = engine.title
        state.epoch = engine.epoch
        state.totalEpochs = engine.totalEpochs
        state.step = engine.stepsTaken
        state.totalSteps = engine.totalSteps
        state.loss = lastLoss
        state.smoothedLoss = smoothedLoss
        state.lossHistory = history
        state.samplesPerSecond = samplesPerSecond
        state.secondsRemaining = secondsRemaining
        state.learningRate = engine.learningRate
        state.seed = engine.seed
        state.gradientCheck = gradientCheck
        engine.describe(into: &state)
        return state
    }
}

/// Runs steps until the engine finishes, `maxSteps` have been taken, the control asks to pause or
/// stop, or a loss is not finite; hands snapshots to `send` as `policy` allows.
/// - Returns: the session as it stands after the last step, and the phase the run ended in.
func runTrainingLoop<Engine: TrainingEngine>(
    _ start: Session<Engine>, control: TrainingControl, policy: SnapshotPolicy, maxSteps: Int?,
    send: (TrainingViewState) -> Void
) -> (Session<Engine>, TrainingViewState.Phase) {
    var session = start
    let clock = ContinuousClock()
    var lastSnapshot = clock.now, lastClockRead = lastSnapshot
    var stepsAtSnapshot = session.engine.stepsTaken
    var stepsPerClockRead = 1, countdown = 1
    var taken = 0

    func snapshot(at now: ContinuousClock.Instant) {
        let steps = session.engine.stepsTaken - stepsAtSnapshot
        let elapsed = (now - lastSnapshot).seconds
        if steps > 0, elapsed > 0 {
            session.samplesPerSecond = Double(steps * session.engine.samplesPerStep) / elapsed
            session.secondsRemaining = Double(session.engine.totalSteps - session.engine.stepsTaken) * elapsed / Double(steps)
        }
        // The latest check rides on every snapshot: the stream keeps only the newest one, so a
        // report sent once could be replaced before the view model reads it.
        send(session.state(phase: .running))
        // The next interval starts when this snapshot is done, so however long a snapshot takes,
        // training gets at least an interval's time between two of them.
        lastSnapshot = clock.now
        stepsAtSnapshot = session.engine.stepsTaken
    }

    while true {
        if session.engine.isFinished { snapshot(at: clock.now); return (session, .finished) }
        if let maxSteps, taken == maxSteps { return (session, .paused) }
        switch control.request.load(ordering: .relaxed) {
        case TrainingControl.pause: return (session, .paused)
        case TrainingControl.stop: return (session, .stopped)
        default: break
        }
        if control.checkRequested.exchange(false, ordering: .relaxed) {
            do {
                session.gradientCheck = try session.engine.checkGradients()
            } catch {
                return (session, .failed("gradient check: \(error)"))
            }
            snapshot(at: clock.now)
        }

        let loss = session.engine.step()
        taken += 1
        session.record(loss: loss)
        guard loss.isFinite else {
            return (session, .diverged(step: session.engine.stepsTaken, location: session.engine.divergenceLocation()))
        }

        if let every = policy.everySteps {
            if session.engine.stepsTaken % every == 0 { snapshot(at: clock.now) }
            continue
        }
        // Reading the clock costs about as much as a single neuron's step, so read it about once
        // per millisecond of training: double the steps between reads while reads come sooner.
        countdown -= 1
        guard countdown == 0 else { continue }
        let now = clock.now
        let sinceRead = now - lastClockRead
        lastClockRead = now
        if sinceRead < .milliseconds(1) { stepsPerClockRead = min(stepsPerClockRead * 2, 1 << 16) }
        else if sinceRead > .milliseconds(4) { stepsPerClockRead = max(stepsPerClockRead / 2, 1) }
        countdown = stepsPerClockRead
        if now - lastSnapshot >= policy.interval { snapshot(at: now) }
    }
}

extension Duration {
    /// The duration in seconds as a Double.
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) * 1e-18
    }
}
