// The view model of a training run: a read-only observable façade over the loop. It owns the
// engine while nothing runs, hands it to a run's task on start/resume/step, and takes it back at
// the step boundary where the run paused, stopped, finished or diverged. Because the engine is a
// value, whatever happened in between, the next run goes on from exactly that step.
import NeuronCore
import Observation

/// Trains an engine (a network or the neuron) off the main actor and shows it as ``TrainingViewState``.
@MainActor @Observable
public final class TrainingViewModel<Engine: TrainingEngine>: TrainingViewModeling {
    /// The state; snapshots from the loop replace it whole.
    public private(set) var viewState: TrainingViewState

    /// How often the loop hands over snapshots.
    @ObservationIgnored public let policy: SnapshotPolicy
    /// The engine and the run's record while no loop owns them.
    @ObservationIgnored private var session: Session<Engine>?
    /// The engine as built, for `reset`.
    @ObservationIgnored private let initial: Engine
    @ObservationIgnored private let control = TrainingControl()
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
    public init(engine: Engine, policy: SnapshotPolicy = .default) {
        initial = engine
        self.policy = policy
        let session = Session(engine: engine)
        self.session = session
        viewState = session.state(phase: .idle)
    }

    /// The engine as it stands at the last step boundary (nil while a run owns it).
    public var engine: Engine? { session?.engine }

    /// The view model of layer `index`, the same one every time.
    public func layer(_ index: Int) -> LayerTrainingViewModel {
        if let child = children[index] { return child }
        let child = LayerTrainingViewModel(parent: self, state: viewState.layers[index])
        children[index] = child
        return child
    }

    public func handle(event: TrainingEvent) {
        switch (event, viewState.phase) {
        case (.start, .idle):
            launch(maxSteps: nil)
        case (.pause, .running):
            control.request.store(TrainingControl.pause, ordering: .relaxed)
        case (.resume, .running) where control.request.load(ordering: .relaxed) == TrainingControl.pause:
            control.request.store(TrainingControl.run, ordering: .relaxed)  // a pause not yet taken is withdrawn
        case (.resume, .paused) where session?.engine.isFinished == false,
             (.resume, .stopped) where session?.engine.isFinished == false:
            launch(maxSteps: nil)
        case (.stop, .running):
            control.request.store(TrainingControl.stop, ordering: .relaxed)
        case (.stop, .paused), (.stop, .idle):
            viewState.phase = .stopped
        case (.reset, let phase) where phase != .running:
            runID += 1  // a check still in flight belongs to the old run
            lastCheck = nil
            lastLoopCheck = nil
            session = Session(engine: initial)
            show(session!.state(phase: .idle))
        case (.step(let count), .idle) where count >= 1 && session?.engine.isFinished == false,
             (.step(let count), .paused) where count >= 1 && session?.engine.isFinished == false:
            launch(maxSteps: count)
        case (.checkGradients, .running):
            control.checkRequested.store(true, ordering: .relaxed)
        case (.checkGradients, .idle), (.checkGradients, .paused), (.checkGradients, .stopped), (.checkGradients, .finished):
            checkGradients()  // a diverged or failed network has nothing worth checking
        default:
            ignore(event)
        }
    }

    // MARK: Runs

    private func launch(maxSteps: Int?) {
        guard let start = session else { return }
        session = nil
        runID += 1
        let id = runID
        control.request.store(TrainingControl.run, ordering: .relaxed)
        viewState.phase = .running
        let (snapshots, continuation) = AsyncStream<TrainingViewState>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let control = self.control, policy = self.policy
        let loop = Task.detached(priority: .userInitiated) {
            let result = runTrainingLoop(start, control: control, policy: policy, maxSteps: maxSteps) { continuation.yield($0) }
            continuation.finish()
            return result
        }
        activity = Task { [weak self] in
            for await state in snapshots { self?.receive(state, run: id) }
            let (session, phase) = await loop.value
            guard let self, id == self.runID else { return }
            self.session = session
            self.receive(session.state(phase: phase), run: id)
        }
    }

    private func checkGradients() {
        guard let engine = session?.engine else { return }
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
                self.viewState.phase = .failed("gradient check: \(error)")
            }
        }
    }

    /// A snapshot or final state from run `id`.
    private func receive(_ state: TrainingViewState, run id: Int) {
        guard id == runID else { return }
        if let report = state.gradientCheck, report != lastLoopCheck {
            lastLoopCheck = report
            lastCheck = report
        }
        show(state)
    }

    /// Replaces the state whole, keeping what only the view model knows.
    private func show(_ state: TrainingViewState) {
        var state = state
        state.gradientCheck = lastCheck
        state.ignoredEvents = viewState.ignoredEvents
        state.ignoredEventCount = viewState.ignoredEventCount
        for i in state.layers.indices {
            state.layers[i].gradientCheck = lastCheck?.tensors.filter { $0.layer == i } ?? []
        }
        viewState = state
        for (i, child) in children where i < state.layers.count { child.update(state.layers[i]) }
    }

    private func ignore(_ event: TrainingEvent) {
        viewState.ignoredEvents.append(.init(event: event, phase: viewState.phase))
        if viewState.ignoredEvents.count > 8 { viewState.ignoredEvents.removeFirst() }
        viewState.ignoredEventCount += 1
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
