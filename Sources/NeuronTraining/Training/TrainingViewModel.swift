// The view model of a training run: a read-only observable façade over the loop. It owns the
// engine while nothing runs, hands it to a run's task on start/resume/step, and takes it back at
// the step boundary where the run paused, stopped, finished or diverged. Because the engine is a
// value, whatever happened in between, the next run goes on from exactly that step. It alone turns
// the engine's `TrainingSnapshot` into the `TrainingViewState` a display shows.
import Foundation
import NeuronCore
import Observation

/// Trains an engine (a network or the neuron) off the main actor and shows it as ``TrainingViewState``.
@MainActor @Observable
public final class TrainingViewModel<Engine: TrainingEngine>: TrainingViewModeling {
    /// The state; snapshots from the loop replace it whole.
    public private(set) var viewState: TrainingViewState

    /// Copies of the engine at every `epochEndsEvery`-th completed epoch, oldest first, not yet
    /// taken with ``takeEpochEnds()``. Each is at a step boundary: a checkpoint of it resumes exactly.
    /// None is ever dropped (unlike snapshots, which keep only the newest) until `reset`, unless
    /// ``keepsOnlyNewestEpochEnd``.
    public private(set) var epochEnds: [Engine] = []
    /// Whether a newer epoch end replaces the untaken ones (at most one is held): for a writer
    /// that only writes the newest, so that memory stays bounded however slowly it takes them.
    @ObservationIgnored public let keepsOnlyNewestEpochEnd: Bool

    /// How often the loop hands over snapshots.
    @ObservationIgnored public let policy: SnapshotPolicy
    /// Which completed epochs (every n-th, counted by records) are kept in ``epochEnds``; nil for none.
    @ObservationIgnored public let epochEndsEvery: Int?
    /// The engine while no run's task owns it.
    @ObservationIgnored private var heldEngine: Engine?
    /// The loop's record of the run (losses, speed), which travels with the engine.
    @ObservationIgnored private var record = LoopRecord()
    /// The engine as built, for `reset`.
    @ObservationIgnored private let initial: Engine
    @ObservationIgnored private let control = TrainingControl()
    /// Whether a run stops at a step boundary, given whether it was asked to; nil: at once.
    @ObservationIgnored private let agreesToStop: (@Sendable (_ asked: Bool) -> Bool)?
    /// Which run's snapshots are current; older runs' late snapshots are dropped.
    @ObservationIgnored private var runID = 0
    /// The last gradient check, kept here so that it outlives the snapshots of later runs.
    @ObservationIgnored private var lastCheck: GradientCheckReport?
    /// The last report adopted from the loop's snapshots (which repeat it until a newer one).
    @ObservationIgnored private var lastLoopCheck: GradientCheckReport?
    @ObservationIgnored private var children: [Int: LayerTrainingViewModel] = [:]
    /// The task driving the current run or check; tests may await it.
    @ObservationIgnored public private(set) var activity: Task<Void, Never>?

    /// A view model over `engine`, idle until `start`.
    /// - Parameters:
    ///   - engine: What is trained, at its first step or where a checkpoint left it.
    ///   - policy: How often the loop hands over snapshots.
    ///   - epochEndsEvery: Keep a copy of the engine in ``epochEnds`` at every this many completed
    ///     epochs (a run's checkpoints); nil keeps none.
    ///   - keepingOnlyNewestEpochEnd: Hold at most the newest of them (see ``keepsOnlyNewestEpochEnd``).
    ///   - agreesToStop: Whether the run stops at a step boundary, given whether it was asked to
    ///     (``Run/agreesToStop``); nil stops as soon as asked.
    public init(
        engine: Engine, policy: SnapshotPolicy = .default, epochEndsEvery: Int? = nil, keepingOnlyNewestEpochEnd: Bool = false,
        agreesToStop: (@Sendable (_ asked: Bool) -> Bool)? = nil
    ) {
        initial = engine
        self.agreesToStop = agreesToStop
        self.policy = policy
        self.epochEndsEvery = epochEndsEvery
        keepsOnlyNewestEpochEnd = keepingOnlyNewestEpochEnd
        heldEngine = engine
        viewState = TrainingViewState(phase: .idle, engine: engine.snapshot(), loop: LoopRecord())
    }

    /// The engine as it stands at the last step boundary (nil while a run owns it).
    public var engine: Engine? { heldEngine }

    /// Hands over the kept epoch ends, oldest first, and forgets them.
    public func takeEpochEnds() -> [Engine] {
        defer { if !epochEnds.isEmpty { epochEnds = [] } }
        return epochEnds
    }

    /// The view model of layer `index`, the same one every time.
    public func layer(_ index: Int) -> LayerTrainingViewModel {
        if let child = children[index] { return child }
        let child = LayerTrainingViewModel(parent: self, state: viewState.layer(index))
        children[index] = child
        return child
    }

    public func handle(event: TrainingEvent) {
        guard let action = action(for: event) else {
            viewState.ignore(event)
            return
        }
        action()
    }

    /// Whether `event` does something in the current state; ``handle(event:)`` ignores it otherwise.
    public func accepts(_ event: TrainingEvent) -> Bool { action(for: event) != nil }

    /// What `event` does in the current state; nil when it means nothing there. The one table of
    /// which event is honoured when, so that what a display enables is what `handle` does.
    private func action(for event: TrainingEvent) -> (@MainActor () -> Void)? {
        switch (event, viewState.phase) {
        case (.start, .idle):
            return { self.launch(maxSteps: nil) }
        case (.pause, .running):
            return { self.control.request.store(TrainingControl.pause, ordering: .relaxed) }
        case (.resume, .running) where control.request.load(ordering: .relaxed) == TrainingControl.pause:
            return { self.control.request.store(TrainingControl.run, ordering: .relaxed) }  // a pause not yet taken is withdrawn
        case (.resume, .paused) where heldEngine?.isFinished == false,
            (.resume, .stopped) where heldEngine?.isFinished == false:
            return { self.launch(maxSteps: nil) }
        case (.stop, .running):
            return { self.control.request.store(TrainingControl.stop, ordering: .relaxed) }
        case (.stop, .paused), (.stop, .idle):
            return { self.viewState.phase = .stopped }
        case (.reset, let phase) where phase != .running:
            return { self.reset() }
        case (.step(let count), .idle) where count >= 1 && heldEngine?.isFinished == false,
            (.step(let count), .paused) where count >= 1 && heldEngine?.isFinished == false:
            return { self.launch(maxSteps: count) }
        case (.checkGradients, .running):
            return { self.control.checkRequested.store(true, ordering: .relaxed) }
        case (.checkGradients, .idle), (.checkGradients, .paused), (.checkGradients, .stopped), (.checkGradients, .finished):
            return { self.checkGradients() }  // a diverged or failed network has nothing worth checking
        default:
            return nil
        }
    }

    private func reset() {
        runID += 1  // a check still in flight belongs to the old run
        lastCheck = nil
        lastLoopCheck = nil
        heldEngine = initial
        record = LoopRecord()
        epochEnds = []  // they belong to the old run
        show(TrainingViewState(phase: .idle, engine: initial.snapshot(), loop: record))
    }

    // MARK: Runs

    private func launch(maxSteps: Int?) {
        guard let start = heldEngine else { return }
        heldEngine = nil
        runID += 1
        let id = runID
        control.request.store(TrainingControl.run, ordering: .relaxed)
        viewState.phase = .running
        let (snapshots, continuation) = AsyncStream<LoopSnapshot>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let kept = epochEndsEvery.map { EpochEnds<Engine>(every: $0, newestOnly: keepsOnlyNewestEpochEnd) }
        let control = self.control, policy = self.policy, startRecord = record, agreesToStop = self.agreesToStop
        // The loop runs on a thread of its own, not on the cooperative pool: it never suspends, and
        // on a 2-core machine two loops on the pool's two threads starved every other task (the
        // observers that would have stopped them included).
        let loop = Task { () -> (Engine, LoopRecord, LoopEnd) in
            await withCheckedContinuation { done in
                let thread = Thread {
                    var engine = start, record = startRecord
                    let end = runTrainingLoop(
                        &engine, record: &record, control: control, policy: policy, maxSteps: maxSteps,
                        epochEnds: kept, agreesToStop: agreesToStop
                    ) { continuation.yield($0) }
                    continuation.finish()
                    done.resume(returning: (engine, record, end))
                }
                thread.name = "neuron training loop"
                thread.qualityOfService = .userInitiated
                thread.stackSize = 8 << 20
                thread.start()
            }
        }
        activity = Task { [weak self] in
            for await snapshot in snapshots { self?.receive(snapshot, end: nil, kept: kept, run: id) }
            let (engine, record, end) = await loop.value
            guard let self, id == self.runID else { return }
            self.heldEngine = engine
            self.record = record
            self.receive(LoopSnapshot(engine: engine.snapshot(), record: record), end: end, kept: kept, run: id)
        }
    }

    private func checkGradients() {
        guard let engine = heldEngine else { return }
        let id = runID
        activity = Task { [weak self] in
            let result = await Task.detached(priority: .userInitiated) { Result { try engine.checkGradients() } }.value
            guard let self, id == self.runID else { return }
            switch result {
            case let .success(report):
                self.lastCheck = report
                var state = self.viewState
                state.gradientCheck = report
                self.show(state)
            case let .failure(error):
                self.viewState.fail("gradient check: \(error)")
            }
        }
    }

    /// A snapshot from run `id`, or its final one with how it ended.
    private func receive(_ snapshot: LoopSnapshot, end: LoopEnd?, kept: EpochEnds<Engine>?, run id: Int) {
        guard id == runID else { return }
        // The epoch ends kept so far are published before the state that follows them, so that
        // once a run's final state shows, every one of its epoch ends has.
        if let taken = kept?.take(), let newest = taken.last {
            if keepsOnlyNewestEpochEnd { epochEnds = [newest] } else { epochEnds += taken }
        }
        if let report = snapshot.record.gradientCheck, report != lastLoopCheck {
            lastLoopCheck = report
            lastCheck = report
        }
        var state = TrainingViewState(phase: .running, engine: snapshot.engine, loop: snapshot.record)
        if let end { state.end(end) }
        show(state)
    }

    /// Replaces the state whole, keeping what only the view model knows.
    private func show(_ state: TrainingViewState) {
        var state = state
        state.gradientCheck = lastCheck
        state.ignoredEvents = viewState.ignoredEvents
        state.ignoredEventCount = viewState.ignoredEventCount
        viewState = state
        for (i, child) in children where i < state.layers.count { child.update(state.layer(i)) }
    }

}

extension TrainingViewState {
    /// What a display shows of an engine's snapshot, in `phase` (no step's loss or speed: those
    /// are the loop's).
    public init(phase: Phase, engine snapshot: TrainingSnapshot) {
        self.init()
        self.phase = phase
        (title, progress, learningRate) = (snapshot.title, snapshot.progress, snapshot.learningRate)
        (validationLoss, validationAccuracy, rankStepSeconds) = (snapshot.validationLoss, snapshot.validationAccuracy, snapshot.rankStepSeconds)
        (layers, neuron, records, sampledLines) = (snapshot.layers, snapshot.neuron, snapshot.records, snapshot.sampledLines)
        tokensPerCharacter = snapshot.tokensPerCharacter
    }

    /// What a display shows of an engine's snapshot and the loop's record, in `phase`.
    init(phase: Phase, engine snapshot: TrainingSnapshot, loop record: LoopRecord) {
        self.init(phase: phase, engine: snapshot)
        (loss, smoothedLoss, lossHistory) = (record.loss, record.smoothedLoss, record.history)
        (samplesPerSecond, secondsRemaining) = (record.samplesPerSecond, record.secondsRemaining)
        gradientCheck = record.gradientCheck
    }

    /// The phase a run's loop ended in, with a divergence's step and place or a failure's message.
    mutating func end(_ end: LoopEnd) {
        switch end {
        case .finished: phase = .finished
        case .paused: phase = .paused
        case .stopped: phase = .stopped
        case let .diverged(step, location): (phase, divergedStep, divergedAt) = (.diverged, step, location)
        case let .failed(message): fail(message)
        }
    }
}

/// One layer's view model, handed out by ``TrainingViewModel/layer(_:)``.
@MainActor @Observable
public final class LayerTrainingViewModel: ViewModel {
    public private(set) var viewState: LayerViewState
    @ObservationIgnored private weak var parent: (any TrainingViewModeling)?

    init(parent: any TrainingViewModeling, state: LayerViewState) {
        self.parent = parent
        viewState = state
    }

    func update(_ state: LayerViewState) {
        if state != viewState { viewState = state }
    }

    /// `checkGradients` asks the parent to check the network; this layer's rows then show here.
    public func handle(event: LayerEvent) {
        switch event {
        case .checkGradients: parent?.handle(event: .checkGradients)
        }
    }
}
