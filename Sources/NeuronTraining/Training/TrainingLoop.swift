// The training loop runs off the main actor, on its own task, owning its engine outright: no lock
// is taken inside a step. The view model reaches it only through `TrainingControl` (atomics read
// once per step), and it reaches the view model only through immutable snapshots at a bounded rate
// and, at the epoch ends asked for, copies of the engine (`EpochEnds`: a lock taken at those alone).
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

/// The loop's own account of a run, beside the engine's: the losses as they came, the speed, the
/// latest check. It travels with the engine between the view model and a run's task.
struct LoopRecord: Sendable, Equatable {
    var history = LossHistory()
    var loss: Double?
    var smoothedLoss: Double?
    var samplesPerSecond: Double?
    var secondsRemaining: Double?
    /// The latest check done by the loop at a step boundary.
    var gradientCheck: GradientCheckReport?

    mutating func record(loss: Double, step: Int) {
        self.loss = loss
        history.append(step: step, loss: loss)
        smoothedLoss = smoothedLoss.map { 0.95 * $0 + 0.05 * loss } ?? loss
    }
}

/// What the loop hands the view model: the engine's snapshot and the loop's record, taken at the
/// same step boundary.
struct LoopSnapshot: Sendable {
    var engine: TrainingSnapshot
    var record: LoopRecord
}

/// Why the loop returned.
enum LoopEnd: Sendable, Equatable {
    /// Every planned step taken.
    case finished
    /// `maxSteps` taken, or a pause asked for.
    case paused
    /// A stop asked for.
    case stopped
    /// The step's loss was not finite.
    case diverged(step: Int, location: String)
    /// A gradient check asked for at a step boundary failed to run.
    case failed(String)
}

/// Copies of the engine at every `every`-th completed epoch, from the loop to the view model.
/// In order, and unbounded unless `newestOnly`: snapshots keep only the newest, so an epoch end
/// carried by one could be replaced before anyone saw it; a copy kept here stays until taken.
/// With `newestOnly` a new copy replaces an untaken one: a run's writer only ever writes the newest,
/// and when epochs are a step long (XOR) and the main actor is slow to take them, thousands of
/// copies, each with its records, filled 24 GB.
final class EpochEnds<Engine: TrainingEngine>: Sendable {
    let every: Int
    let newestOnly: Bool
    private let kept = Mutex<[Engine]>([])

    init(every: Int, newestOnly: Bool = false) {
        self.every = max(1, every)
        self.newestOnly = newestOnly
    }

    func keep(_ engine: Engine) {
        kept.withLock {
            if newestOnly { $0.removeAll(keepingCapacity: true) }
            $0.append(engine)
        }
    }

    /// The copies kept since the last call, oldest first.
    func take() -> [Engine] {
        kept.withLock { kept in
            defer { kept.removeAll() }
            return kept
        }
    }
}

/// Runs steps until the engine finishes, `maxSteps` have been taken, the control asks to pause or
/// stop, or a loss is not finite; hands snapshots to `send` as `policy` allows, and a copy of the
/// engine to `epochEnds` at each epoch end it asks for. A stop is taken at the first step boundary
/// where `agreesToStop` (given whether one was asked for) says so; without it, at once.
/// - Returns: why it ended; `engine` and `record` are left as they stand after the last step.
func runTrainingLoop<Engine: TrainingEngine>(
    _ engine: inout Engine, record: inout LoopRecord, control: TrainingControl, policy: SnapshotPolicy, maxSteps: Int?,
    epochEnds: EpochEnds<Engine>?, agreesToStop: ((_ asked: Bool) -> Bool)? = nil, send: (LoopSnapshot) -> Void
) -> LoopEnd {
    let clock = ContinuousClock()
    var lastSnapshot = clock.now, lastClockRead = lastSnapshot
    // Speed is measured over the last 5–10 s, not since the last snapshot: an interval that holds
    // an epoch's validation pass would otherwise show a few samples/s and hours left, once an epoch.
    var speedFrom = (instant: lastSnapshot, steps: engine.stepsTaken), speedNext = speedFrom
    var stepsPerClockRead = 1, countdown = 1
    var taken = 0
    var epochsSeen = engine.records.count

    func snapshot(at now: ContinuousClock.Instant) {
        let steps = engine.stepsTaken - speedFrom.steps
        let elapsed = (now - speedFrom.instant).seconds
        if steps > 0, elapsed > 0 {
            record.samplesPerSecond = Double(steps * engine.samplesPerStep) / elapsed
            record.secondsRemaining = Double(engine.totalSteps - engine.stepsTaken) * elapsed / Double(steps)
        }
        // The latest check rides on every snapshot: the stream keeps only the newest one, so a
        // report sent once could be replaced before the view model reads it.
        send(LoopSnapshot(engine: engine.snapshot(), record: record))
        // The next interval starts when this snapshot is done, so however long a snapshot takes,
        // training gets at least an interval's time between two of them.
        lastSnapshot = clock.now
        if now - speedNext.instant >= .seconds(5) { (speedFrom, speedNext) = (speedNext, (now, engine.stepsTaken)) }
    }

    while true {
        if engine.isFinished { snapshot(at: clock.now); return .finished }
        if let maxSteps, taken == maxSteps { return .paused }
        let request = control.request.load(ordering: .relaxed)
        if request == TrainingControl.pause { return .paused }
        // Alone, a stop is taken at once; processes training together all stop after the same step.
        let asked = request == TrainingControl.stop
        if agreesToStop.map({ $0(asked) }) ?? asked { return .stopped }
        if control.checkRequested.exchange(false, ordering: .relaxed) {
            do {
                record.gradientCheck = try engine.checkGradients()
            } catch {
                return .failed("gradient check: \(error)")
            }
            snapshot(at: clock.now)
        }

        let loss = engine.step()
        taken += 1
        record.record(loss: loss, step: engine.stepsTaken)
        guard loss.isFinite else {
            return .diverged(step: engine.stepsTaken, location: engine.divergenceLocation())
        }
        if let epochEnds, engine.records.count != epochsSeen {
            // A copy at a step boundary: resuming from it gives the numbers of a run that never stopped.
            epochsSeen = engine.records.count
            if epochsSeen % epochEnds.every == 0 { epochEnds.keep(engine) }
        }

        if let every = policy.everySteps {
            if engine.stepsTaken % every == 0 { snapshot(at: clock.now) }
            continue
        }
        // Reading the clock costs about as much as a single neuron's step, so read it about once
        // per millisecond of training: double the steps between reads while reads come sooner.
        countdown -= 1
        guard countdown == 0 else { continue }
        let now = clock.now
        let sinceRead = now - lastClockRead
        lastClockRead = now
        if sinceRead < .milliseconds(1) {
            stepsPerClockRead = min(stepsPerClockRead * 2, 1 << 16)
        } else if sinceRead > .milliseconds(4) {
            stepsPerClockRead = max(stepsPerClockRead / 2, 1)
        }
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
