// The page's side of the view-model protocol, on the main actor: it observes `viewState` as the
// terminal's progress view does, turns each state into a frame at most 20 times a second, and
// hands the page's events to `handle(event:)`. It never guesses: the page shows the state the
// view model answers with. A live run's end is told once, by `finish`: the final state with its
// summary (the test evaluation comes after the view model's last state), as every page's last frame.
import Foundation
import NeuronCore
import NeuronTraining
import Observation

/// Binds a training view model to the dashboard's frames and events.
@MainActor
public final class DashboardBinding {
    /// Where frames come from, for the page: `live` or `files`.
    public let source: String
    private let state: @MainActor () -> TrainingViewState
    private let send: @MainActor (TrainingEvent) -> Void
    private let accepts: @MainActor (TrainingEvent) -> Bool
    private let engine: @MainActor () -> (any InspectableEngine)?
    /// Frames to the connected pages.
    public let broadcaster = FrameBroadcaster()
    /// The layers' shapes, read once from the engine (they do not change during a run).
    public private(set) var layouts: [LayerLayout]
    /// The attention panel's first line, read once from the engine; nil: the model has no attention layer.
    public let attentionLine: String?
    private var histories: [LayerHistory] = []
    private var observing: Task<Void, Never>?, keepingAlive: Task<Void, Never>?
    /// Frames published so far.
    public private(set) var publishedFrames = 0
    /// Frames encoded so far (concurrent readers of one state share its encoding).
    public private(set) var encodedFrames = 0
    /// The newest frame's JSON and what it was made of: requests for an unchanged state share it.
    private var encoded: (state: TrainingViewState, engineAvailable: Bool, ended: Bool, json: Data)?
    /// The run's final state and summary once ``finish(state:summary:)`` was called; every frame
    /// shows them from then on.
    private var ending: (state: TrainingViewState, summary: RunSummary?)?

    /// The shortest time between two frames: at most 20 a second.
    public static let frameInterval = Duration.milliseconds(50)

    /// A binding to `model`.
    /// - Parameters:
    ///   - model: the view model the page shows and steers.
    ///   - engine: the engine when the model holds it (not while a run owns it), for explanations and weights.
    ///   - source: `live` for a run training, `files` for a run directory.
    public init<Model: TrainingViewModeling>(
        model: Model, engine: @escaping @MainActor () -> (any TrainingEngine)?, source: String = "live"
    ) {
        self.source = source
        state = { model.viewState }
        send = { model.handle(event: $0) }
        accepts = { model.accepts($0) }
        self.engine = { engine() as? any InspectableEngine }
        layouts = (engine() as? any InspectableEngine)?.layerLayouts() ?? []
        attentionLine = (engine() as? any InspectableEngine)?.attentionLine
    }

    /// The current state's frame, as the page receives it.
    public func frame() -> DashboardFrame {
        let state = current()
        record(state)
        return makeFrame(state)
    }

    /// The view model's state, or the final one once the run has ended.
    private func current() -> TrainingViewState { ending?.state ?? state() }

    /// Whether the page can ask for explanations and weights: the model holds the engine and the
    /// server is not closing for good.
    private var engineAvailable: Bool { ending == nil && engine() != nil }

    private func makeFrame(_ state: TrainingViewState) -> DashboardFrame {
        // After the end nothing is accepted: the server that would take an event is going away.
        DashboardFrame(
            state, source: source, layouts: layouts, histories: histories, engineAvailable: engineAvailable,
            acceptedEvents: ending != nil ? [] : TrainingEvent.Name.allCases.filter { accepts(TrainingEvent($0)) },
            attentionLine: attentionLine, ending: ending.map { DashboardFrame.Ending(summary: $0.summary) })
    }

    /// Starts publishing a frame for every state change, at most one per ``frameInterval``
    /// (the newest state then), while any page is connected.
    public func start() {
        guard observing == nil else { return }
        observing = Task { [weak self] in
            guard let states = self.map({ binding in Observations { binding.state() } }) else { return }
            for await _ in states {
                guard let self, !Task.isCancelled else { return }
                self.publish()
                try? await Task.sleep(for: Self.frameInterval)
            }
        }
        // While nothing changes (a paused run) a frame every 15 s still goes out: a page that went
        // away is noticed when its connection refuses the write, and its slot is let go.
        keepingAlive = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(15))
                self?.publish()
            }
        }
    }

    /// Stops publishing and ends every page's stream.
    public func stop() {
        stopObserving()
        broadcaster.closeAll()
    }

    private func stopObserving() {
        observing?.cancel()
        keepingAlive?.cancel()
        (observing, keepingAlive) = (nil, nil)
    }

    /// Tells every page how the run ended, as its last frame: `state` (the run's final state, with
    /// the speed over the whole run) and `summary` (the final evaluation; nil when the run diverged
    /// or failed). Each page's stream then ends, and a page that connects later gets this frame
    /// alone. Events are no longer handed to the view model: the run is over.
    public func finish(state: TrainingViewState, summary: RunSummary?) {
        stopObserving()
        ending = (state, summary)
        if broadcaster.subscriberCount > 0 { publishedFrames += 1 }
        broadcaster.finish(with: Self.event(stateJSON()))
    }

    /// The view model's current state, ended in `TrainingViewState.Phase.failed` with `message`:
    /// the final state of a run that ended in an error thrown after its last state (a file of the
    /// run directory that could not be written).
    public func failedState(_ message: String) -> TrainingViewState {
        var state = current()
        state.fail(message)
        return state
    }

    /// The current state's frame as JSON. Encoded once per state: any number of pages asking for
    /// an unchanged state share one encoding (one copy of its bytes).
    public func stateJSON() -> Data {
        let state = current()
        record(state)
        let engineAvailable = self.engineAvailable, ended = ending != nil
        // Equal arrays sharing storage compare in O(1): an unchanged state costs next to nothing.
        if let encoded, encoded.engineAvailable == engineAvailable, encoded.ended == ended, encoded.state == state { return encoded.json }
        let json = makeFrame(state).json()
        encoded = (state, engineAvailable, ended, json)
        encodedFrames += 1
        return json
    }

    /// Publishes the current frame now (a page that just connected, a keep-alive).
    public func publish() {
        // The layers' curves need every state's numbers, whether or not a page is there to see them.
        guard broadcaster.subscriberCount > 0 else {
            record(current())
            return
        }
        publishedFrames += 1
        broadcaster.publish(Self.event(stateJSON()))
    }

    /// Hands `event` to the view model and returns the JSON of its answer's frame; after the
    /// run's end, only returns the final frame.
    public func handle(_ event: TrainingEvent) -> Data {
        if ending == nil { send(event) }
        return stateJSON()
    }

    /// Unit `unit` of layer `layer` explained on training sample `sample`, at `position` for a layer
    /// over a sequence (nil: its default); nil while a run owns the engine.
    public func explain(layer: Int, unit: Int, sample: Int, position: Int? = nil) async throws -> UnitExplanation? {
        guard let engine = engine() else { return nil }
        return try await Self.explain(engine, layer: layer, unit: unit, sample: sample, position: position)
    }

    /// Off the main actor: a unit of a wide layer takes two forward passes per weight.
    nonisolated private static func explain(
        _ engine: any InspectableEngine, layer: Int, unit: Int, sample: Int, position: Int?
    ) async throws -> UnitExplanation {
        try await Task.detached(priority: .userInitiated) { try engine.explainUnit(layer: layer, unit: unit, sample: sample, position: position) }
            .value
    }

    /// Every attention layer's weights on the line `text`; nil while a run owns the engine.
    public func attentionMaps(text: String) async throws -> AttentionMaps? {
        guard let engine = engine() else { return nil }
        // Off the main actor, on the engine's copy: a forward pass, whatever the run does next.
        return try await Task.detached(priority: .userInitiated) { try engine.attentionMaps(text: text) }.value
    }

    /// Layer `index`'s weights and shape, when the model holds the engine and the layer has weights.
    public func weights(ofLayer index: Int) -> (shape: [Int], values: [Double])? {
        engine()?.layerWeights(index)
    }

    /// One Server-Sent Event holding `json`.
    nonisolated static func event(_ json: Data) -> [UInt8] {
        Array("data: ".utf8) + Array(json) + Array("\n\n".utf8)
    }

    private func record(_ state: TrainingViewState) {
        if histories.count != state.layers.count { histories = state.layers.map { _ in LayerHistory() } }
        for (i, layer) in state.layers.enumerated() { histories[i].append(step: state.progress.step, layer) }
    }
}
