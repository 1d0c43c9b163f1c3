// The CLI's progress display: nothing but a view of a training view model's observed state. It
// reads `viewState` through `TrainingSession.watch` (Observations), renders with `ProgressRenderer` and hands text to a
// `write` closure, so a preview view model with injected states drives it in tests exactly as the
// real one drives it in the terminal.
import NeuronTraining

/// How the progress is written.
public enum ProgressMode: Sendable, Equatable {
    /// Redraws one line in place: `"\r"` + the line, padded to clear the previous one; a final `"\n"` at the end.
    case live
    /// A full line when `every` has passed since the last one written (by the injected clock),
    /// and always on a phase change.
    case plain(every: Duration)
    /// One ``ProgressRenderer/jsonLine(_:)`` per observed state, each ending in `"\n"`.
    case json
    /// Nothing at all: the caller prints its own summary (`neuron train --quiet`).
    case quiet
}

/// Watches a training view model and writes what it shows. The CLI's progress display.
@MainActor
public final class ProgressView<Model: TrainingViewModeling> {
    private let model: Model
    private let mode: ProgressMode
    private let renderer: ProgressRenderer
    /// Time on the injected clock since this view was made.
    private let elapsed: () -> Duration
    private let write: @MainActor (String) -> Void

    /// The phase and clock time of the last line written in plain mode.
    private var lastPlain: (phase: TrainingViewState.Phase, at: Duration)?
    /// The length of the line on screen in live mode, to be blanked by the next one.
    private var liveWidth = 0
    /// How many states ``run()`` has observed: lets a test know a state was seen even when the
    /// mode wrote nothing for it.
    private(set) var observedStateCount = 0

    /// A view of `model`.
    /// - Parameters:
    ///   - model: The view model watched.
    ///   - mode: How to write.
    ///   - renderer: What turns a state into text.
    ///   - clock: Measures plain mode's interval between lines.
    ///   - write: Receives text exactly as it should go to the output (the CLI passes stdout or
    ///     stderr writes; tests collect it).
    public init(
        model: Model, mode: ProgressMode, renderer: ProgressRenderer = ProgressRenderer(),
        clock: any Clock<Duration> = ContinuousClock(), write: @escaping @MainActor (String) -> Void
    ) {
        self.model = model
        self.mode = mode
        self.renderer = renderer
        self.elapsed = Self.stopwatch(clock)
        self.write = write
    }

    /// Observes `model.viewState` and writes according to the mode until the phase is finished,
    /// stopped, diverged or failed; writes that last state too (in live mode its line, then
    /// `"\n"`) and returns it. When the calling task is cancelled first, it ends the live line
    /// and returns the last state seen.
    public func run() async -> TrainingViewState {
        let last = await TrainingSession.watch(model) { state in
            observedStateCount += 1
            if !state.phase.endsRun { show(state) }
        }
        if last.phase.endsRun {
            show(final: last)
        } else if mode == .live, liveWidth > 0 {
            write("\n")
        }
        return last
    }

    private func show(_ state: TrainingViewState) {
        switch mode {
        case .live:
            redraw(renderer.line(state))
        case let .plain(every):
            let now = elapsed()
            if let last = lastPlain, last.phase == state.phase, now - last.at < every { return }
            lastPlain = (state.phase, now)
            write(renderer.line(state) + "\n")
        case .json:
            write(renderer.jsonLine(state) + "\n")
        case .quiet:
            break
        }
    }

    private func show(final state: TrainingViewState) {
        switch mode {
        case .live:
            redraw(renderer.line(state))
            write("\n")
        case .plain:
            write(renderer.line(state) + "\n")
        case .json:
            write(renderer.jsonLine(state) + "\n")
        case .quiet:
            break
        }
    }

    /// Replaces the line on screen: back to its start, then enough spaces to blank a longer one.
    private func redraw(_ line: String) {
        let width = line.count
        write("\r" + line + String(repeating: " ", count: max(0, liveWidth - width)))
        liveWidth = width
    }

    /// Opens the clock existential once: `now` of `any Clock` has no nameable instant type.
    private static func stopwatch<C: Clock<Duration>>(_ clock: C) -> () -> Duration {
        let start = clock.now
        return { start.duration(to: clock.now) }
    }
}

extension ProgressMode {
    /// The session's view in this mode: a ``ProgressView`` of the run's view model, writing to `write`.
    @MainActor
    public func view(write: @escaping @MainActor (String) -> Void) -> TrainingSession.View {
        { model in await Self.show(model, mode: self, write: write) }
    }

    @MainActor
    private static func show<Model: TrainingViewModeling>(
        _ model: Model, mode: ProgressMode, write: @escaping @MainActor (String) -> Void
    ) async -> TrainingViewState {
        await ProgressView(model: model, mode: mode, write: write).run()
    }
}
