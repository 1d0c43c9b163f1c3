import Foundation
import Synchronization
import Testing

@testable import NeuronTerminal
@testable import NeuronTraining

@MainActor
@Suite("Progress view")
struct ProgressViewTests {
    typealias Preview = PreviewViewModel<TrainingEvent, TrainingViewState>
    let renderer = ProgressRenderer()

    // MARK: - Helpers

    /// A clock that moves only when told to: plain mode's interval without waiting for it.
    final class ManualClock: Clock, Sendable {
        struct Instant: InstantProtocol {
            var offset: Duration
            func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
            func duration(to other: Instant) -> Duration { other.offset - offset }
            static func < (a: Instant, b: Instant) -> Bool { a.offset < b.offset }
        }

        private let current = Mutex(Instant(offset: .zero))
        var now: Instant { current.withLock { $0 } }
        var minimumResolution: Duration { .zero }

        func advance(by duration: Duration) {
            current.withLock { $0 = $0.advanced(by: duration) }
        }

        /// Waits until someone advances the clock past `deadline` (the view never sleeps).
        func sleep(until deadline: Instant, tolerance: Duration?) async throws {
            while now < deadline {
                try Task.checkCancellation()
                await Task.yield()
            }
        }
    }

    /// What the view wrote, one entry per `write` call.
    @MainActor final class Output {
        var writes: [String] = []
        var text: String { writes.joined() }
    }

    struct TimedOut: Error {}

    /// Polls `condition`, letting other tasks run in between, until it holds; records an issue
    /// and throws after `timeout` of wall-clock time (a timeout only, never a synchronisation).
    static func waitUntil(
        timeout: Duration = .seconds(60), _ what: String, sourceLocation: SourceLocation = #_sourceLocation,
        _ condition: () -> Bool
    ) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while !condition() {
            guard clock.now < deadline else {
                Issue.record("timed out waiting until \(what)", sourceLocation: sourceLocation)
                throw TimedOut()
            }
            await Task.yield()
        }
    }

    /// A state of `phase` at `step` of 10, with a loss that shows which step it came from.
    static func state(_ phase: TrainingViewState.Phase, step: Int) -> TrainingViewState {
        var state = TrainingViewState()
        state.phase = phase
        (state.progress.step, state.progress.totalSteps) = (step, 10)
        state.loss = 1 / Double(step + 1)
        if phase == .running { state.samplesPerSecond = 12_345 }
        return state
    }

    /// running → running → paused → running → finished.
    static let sequence: [TrainingViewState] = [
        state(.running, step: 1), state(.running, step: 2), state(.paused, step: 2),
        state(.running, step: 3), state(.finished, step: 10),
    ]

    /// Runs a view of a preview that starts at `states[0]` and is shown each following state
    /// once the view has observed the one before; `beforeInjecting(i)` runs before `states[i]`
    /// is injected. Returns what `run()` returned and, after each state was observed, how many
    /// writes there had been.
    static func drive(
        _ mode: ProgressMode, clock: any Clock<Duration> = ContinuousClock(),
        states: [TrainingViewState], output: Output, beforeInjecting: (Int) -> Void = { _ in }
    ) async throws -> (final: TrainingViewState, writesAfter: [Int]) {
        let preview = Preview(states[0])
        let view = ProgressView(model: preview, mode: mode, clock: clock) { output.writes.append($0) }
        let running = Task { await view.run() }
        var writesAfter: [Int] = []
        do {
            for i in states.indices {
                if i > 0 {
                    beforeInjecting(i)
                    preview.viewState = states[i]
                }
                try await Self.waitUntil("state \(i) is observed") { view.observedStateCount >= i + 1 }
                #expect(view.observedStateCount == i + 1, "each injected state observed once")
                writesAfter.append(output.writes.count)
            }
        } catch {
            running.cancel()
            throw error
        }
        let final = await running.value
        #expect(preview.receivedEvents.isEmpty, "the view only watches: it sends no events")
        return (final, writesAfter)
    }

    // MARK: - Modes

    @Test("Live: one line redrawn in place, padded over a longer one, then a final newline")
    func live() async throws {
        let output = Output()
        let (final, writesAfter) = try await Self.drive(.live, states: Self.sequence, output: output)
        #expect(final == Self.sequence.last)
        #expect(writesAfter == [1, 2, 3, 4, 6], "a redraw per state, and the final newline")

        let lines = Self.sequence.map(renderer.line)
        #expect(lines[1].count > lines[2].count, "the paused line is shorter and must blank the running one")
        #expect(
            output.writes == [
                "\r" + lines[0],
                "\r" + lines[1],
                "\r" + lines[2] + String(repeating: " ", count: lines[1].count - lines[2].count),
                "\r" + lines[3],
                "\r" + lines[4] + String(repeating: " ", count: max(0, lines[3].count - lines[4].count)),
                "\n",
            ])
        #expect(output.text.filter { $0 == "\n" }.count == 1, "no newline until the end")
        #expect(output.text.hasSuffix("\n"))
        #expect(lines[4].hasPrefix("finished  step 10/10"))
    }

    @Test("Plain: a line when the interval has passed on the injected clock, and on every phase change")
    func plain() async throws {
        let clock = ManualClock()
        let output = Output()
        let states = [
            Self.state(.running, step: 1),  // t = 0s: the first state is written
            Self.state(.running, step: 2),  // t = 3s: too soon
            Self.state(.running, step: 3),  // t = 11s: 11s since the last line, ≥ 10s
            Self.state(.paused, step: 3),  // t = 12s: phase change
            Self.state(.running, step: 4),  // t = 13s: phase change
            Self.state(.running, step: 5),  // t = 14s: too soon
            Self.state(.running, step: 6),  // t = 22s: 9s since the last line: too soon
            Self.state(.finished, step: 10),  // t = 23s: the end
        ]
        let advances: [Duration] = [.zero, .seconds(3), .seconds(8), .seconds(1), .seconds(1), .seconds(1), .seconds(8), .seconds(1)]
        let (final, writesAfter) = try await Self.drive(
            .plain(every: .seconds(10)), clock: clock, states: states, output: output,
            beforeInjecting: { clock.advance(by: advances[$0]) })
        #expect(final == states.last)
        #expect(writesAfter == [1, 1, 2, 3, 4, 4, 4, 5])
        #expect(output.writes == [0, 2, 3, 4, 7].map { renderer.line(states[$0]) + "\n" })
        #expect(!output.text.contains("\r"))
    }

    @Test("JSON: one parseable object per observed state, the last one finished")
    func json() async throws {
        let output = Output()
        let (final, writesAfter) = try await Self.drive(.json, states: Self.sequence, output: output)
        #expect(final.phase == .finished)
        #expect(writesAfter == [1, 2, 3, 4, 5])
        #expect(output.writes.allSatisfy { $0.hasSuffix("\n") && $0.dropLast().firstIndex(of: "\n") == nil })

        let objects = try output.writes.map { try TrainingViewState.decoder().decode(TrainingViewState.self, from: Data($0.utf8)) }
        #expect(objects.map(\.phase) == [.running, .running, .paused, .running, .finished])
        #expect(objects.map(\.progress.step) == [1, 2, 2, 3, 10])
        #expect(objects.last?.loss == 1 / 11.0)
    }

    @Test("Quiet: nothing written at all, and run() returns the final state")
    func quiet() async throws {
        let output = Output()
        let (final, writesAfter) = try await Self.drive(.quiet, states: Self.sequence, output: output)
        #expect(final == Self.sequence.last)
        #expect(writesAfter == [0, 0, 0, 0, 0])
        #expect(output.writes.isEmpty)
    }

    // MARK: - When run() returns

    @Test(
        "run() returns when the phase becomes stopped, diverged or failed, having written it",
        arguments: [
            TrainingViewState.Phase.stopped, .diverged, .failed,
        ])
    func endingPhases(phase: TrainingViewState.Phase) async throws {
        let output = Output()
        let end = Self.state(phase, step: 37)
        let (final, _) = try await Self.drive(
            .plain(every: .seconds(3_600)), clock: ManualClock(),
            states: [Self.state(.running, step: 36), end], output: output)
        #expect(final == end)
        #expect(output.writes.last == renderer.line(end) + "\n")
        #expect(output.writes.last?.hasPrefix(phase.rawValue) == true)
    }

    @Test("A model already finished is written once and run() returns at once")
    func alreadyFinished() async throws {
        let output = Output()
        let end = Self.state(.finished, step: 10)
        let (final, writesAfter) = try await Self.drive(.live, states: [end], output: output)
        #expect(final == end)
        #expect(writesAfter == [2])
        #expect(output.writes == ["\r" + renderer.line(end), "\n"])
    }

    @Test("Cancelled, run() ends the live line and returns the last state seen")
    func cancelled() async throws {
        let output = Output()
        let running = Self.state(.running, step: 3)
        let view = ProgressView(model: Preview(running), mode: .live) { output.writes.append($0) }
        var returned: TrainingViewState?
        let task = Task { returned = await view.run() }
        try await Self.waitUntil("the first state is observed") { view.observedStateCount == 1 }
        task.cancel()
        try await Self.waitUntil("run() returns") { returned != nil }
        #expect(returned == running)
        #expect(output.writes == ["\r" + renderer.line(running), "\n"])
    }

    @Test("Idle and paused do not end the run")
    func idleAndPausedGoOn() async throws {
        let output = Output()
        let states = [
            Self.state(.idle, step: 0), Self.state(.paused, step: 0), Self.state(.running, step: 1),
            Self.state(.finished, step: 10),
        ]
        let (final, writesAfter) = try await Self.drive(.json, states: states, output: output)
        #expect(final == states.last)
        #expect(writesAfter == [1, 2, 3, 4])
    }
}
