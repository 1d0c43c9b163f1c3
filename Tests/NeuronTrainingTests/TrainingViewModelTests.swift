import NeuronCore
import Observation
import Testing

@testable import NeuronTraining

@Suite("Training view model: driven only by events, observed only through its state")
@MainActor
struct TrainingViewModelTests {
    @Test("start → running → finished, observed through Observations")
    func runsToTheEnd() async throws {
        let vm = TrainingViewModel(engine: try xorEngine(epochs: 1_000), policy: .every(50))
        #expect(vm.viewState.phase == .idle && vm.viewState.progress.step == 0 && vm.viewState.progress.totalSteps == 1_000)
        #expect(vm.viewState.title == "Network[Dense(2→4, tanh), Dense(4→1, tanh)]")
        vm.handle(event: .start)
        #expect(vm.viewState.phase == .running)
        let final = try await waitUntil(vm) { $0.phase == .finished }
        #expect(final.progress.step == 1_000 && final.progress.epoch == 1_000)
        #expect(final.lossHistory.points.count > 0 && final.lossHistory.points.count <= final.lossHistory.capacity)
        #expect((final.smoothedLoss ?? 1) < 0.01)
        #expect(final.layers.map(\.title) == ["Dense(2→4, tanh)", "Dense(4→1, tanh)"])
        #expect(final.layers.allSatisfy { $0.weightNorm > 0 } && final.layers[0].saturation != nil)
        // The same weights as the engine run with no view model at all.
        #expect(vm.engine?.network.parameters == straightRun(try xorEngine(epochs: 1_000)).network.parameters)
    }

    @Test("Pausing and resuming mid-run gives the weights of a run that never paused")
    func pauseResumeExact() async throws {
        let engine = try xorEngine(epochs: endless)
        let vm = TrainingViewModel(engine: engine, policy: .every(100))
        // The script reacts to each observed state with the next event, as a user at a screen would.
        var phases: [TrainingViewState.Phase] = []
        var pausedAt: Int?
        for await state in Observations({ vm.viewState }) {
            if phases.last != state.phase { phases.append(state.phase) }
            switch state.phase {
            case .idle: vm.handle(event: .start)
            case .running where pausedAt == nil && state.progress.step >= 100: vm.handle(event: .pause)
            case .paused:
                pausedAt = state.progress.step
                #expect(vm.engine?.stepsTaken == state.progress.step)  // the engine is back, at the step the state shows
                vm.handle(event: .resume)
            case .running where pausedAt.map { state.progress.step >= $0 + 100 } == true: vm.handle(event: .stop)
            default: break
            }
            if state.phase == .stopped { break }
        }
        #expect(phases == [.idle, .running, .paused, .running, .stopped])
        let paused = try #require(pausedAt)
        let ended = try #require(vm.engine)
        #expect(paused >= 100 && ended.stepsTaken >= paused + 100)
        #expect(ended.network.parameters == straightRun(engine, steps: ended.stepsTaken).network.parameters)
    }

    @Test("Stopping, then resuming from the stopped state, gives the weights of a run that never stopped")
    func stopResumeExact() async throws {
        let engine = try xorEngine(epochs: endless)
        let vm = TrainingViewModel(engine: engine, policy: .every(100))
        vm.handle(event: .start)
        _ = try await waitUntil(vm) { $0.progress.step >= 100 }
        vm.handle(event: .stop)
        let stopped = try await waitUntil(vm) { $0.phase == .stopped }
        vm.handle(event: .resume)
        _ = try await waitUntil(vm) { $0.phase == .running && $0.progress.step >= stopped.progress.step + 100 }
        vm.handle(event: .stop)
        _ = try await waitUntil(vm) { $0.phase == .stopped }
        let ended = try #require(vm.engine)
        #expect(ended.stepsTaken > stopped.progress.step)
        #expect(ended.network.parameters == straightRun(engine, steps: ended.stepsTaken).network.parameters)
    }

    @Test("Single steps while idle or paused: exactly that many, then paused")
    func singleSteps() async throws {
        let engine = try xorEngine(epochs: 50)
        let vm = TrainingViewModel(engine: engine, policy: .every(1))
        vm.handle(event: .step(count: 37))
        var state = try await waitUntil(vm) { $0.phase == .paused }
        #expect(state.progress.step == 37)
        vm.handle(event: .step(count: 1))
        state = try await waitUntil(vm) { $0.phase == .paused && $0.progress.step == 38 }
        vm.handle(event: .resume)
        _ = try await waitUntil(vm) { $0.phase == .finished }
        #expect(vm.engine?.network.parameters == straightRun(engine).network.parameters)
    }

    @Test("Events that mean nothing in the phase are ignored, and the state says so")
    func ignoredEvents() async throws {
        let vm = TrainingViewModel(engine: try xorEngine(epochs: endless), policy: .every(100))
        vm.handle(event: .resume)  // idle: nothing to resume
        vm.handle(event: .step(count: 0))  // zero steps mean nothing
        #expect(vm.viewState.phase == .idle && vm.viewState.progress.step == 0)
        vm.handle(event: .start)
        vm.handle(event: .start)  // already running
        vm.handle(event: .step(count: 3))  // single steps only while paused or idle
        vm.handle(event: .reset)  // not while running
        #expect(vm.viewState.ignoredEventCount == 5)
        #expect(vm.viewState.ignoredEvents.map(\.event) == [.resume, .step(count: 0), .start, .step(count: 3), .reset])
        #expect(vm.viewState.ignoredEvents.map(\.phase) == [.idle, .idle, .running, .running, .running])
        vm.handle(event: .stop)
        _ = try await waitUntil(vm) { $0.phase == .stopped }
        // Snapshots replaced the state many times; the record of ignored events survived them.
        #expect(vm.viewState.ignoredEventCount == 5)
        vm.handle(event: .reset)
        let reset = try await waitUntil(vm) { $0.phase == .idle }
        #expect(reset.progress.step == 0 && reset.loss == nil)
        #expect(vm.engine?.network.parameters == (try xorEngine(epochs: endless)).network.parameters)
    }

    @Test("accepts(_:) answers what handle(event:) does: in each phase the accepted events are these, and every other is ignored")
    func acceptedEvents() async throws {
        let all: [TrainingEvent] = [.start, .pause, .resume, .stop, .reset, .step(count: 1), .checkGradients]
        /// The accepted events now; each refused one, handled, is counted as ignored and changes nothing.
        func accepted<E>(_ vm: TrainingViewModel<E>, sourceLocation: SourceLocation = #_sourceLocation) -> [TrainingEvent] {
            let accepted = all.filter(vm.accepts)
            let (phase, ignored) = (vm.viewState.phase, vm.viewState.ignoredEventCount)
            for event in all where !accepted.contains(event) { vm.handle(event: event) }
            #expect(vm.viewState.phase == phase, sourceLocation: sourceLocation)
            #expect(vm.viewState.ignoredEventCount == ignored + all.count - accepted.count, sourceLocation: sourceLocation)
            return accepted
        }
        let vm = TrainingViewModel(engine: try xorEngine(epochs: endless), policy: .every(100))
        #expect(accepted(vm) == [.start, .stop, .reset, .step(count: 1), .checkGradients])
        vm.handle(event: .start)
        #expect(accepted(vm) == [.pause, .stop, .checkGradients])  // running: not start, resume, reset or step
        vm.handle(event: .pause)
        _ = try await waitUntil(vm) { $0.phase == .paused }
        #expect(accepted(vm) == [.resume, .stop, .reset, .step(count: 1), .checkGradients])
        vm.handle(event: .stop)
        #expect(vm.viewState.phase == .stopped)
        #expect(accepted(vm) == [.resume, .reset, .checkGradients])
        let short = TrainingViewModel(engine: try xorEngine(epochs: 20), policy: .every(5))
        short.handle(event: .start)
        _ = try await waitUntil(short) { $0.phase == .finished }
        #expect(accepted(short) == [.reset, .checkGradients])  // nothing left to resume or step
        // A zero-step request is never accepted.
        #expect(!vm.accepts(.step(count: 0)))
    }

    @Test("A NaN loss moves the phase to diverged with the step and the layer")
    func divergence() async throws {
        var generator = SeededGenerator(seed: 4)
        let data: Dataset<Double> = try Synthetic.sine(count: 64, generator: &generator)
        let network = try Network<Double>(features: 1, layers: [(16, .relu), (1, .identity)], loss: .halfSquaredError, seed: 4)
        let engine = try NetworkTrainingEngine(
            network: network, optimizer: try SGD<Double>(learningRate: 1e3), dataset: data,
            batchSize: 16, epochs: 100, seed: 4)
        let vm = TrainingViewModel(engine: engine, policy: .every(1))
        vm.handle(event: .start)
        let state = try await waitUntil(vm) { $0.phase == .diverged }
        let (step, location) = (try #require(state.divergedStep), try #require(state.divergedAt))
        #expect(step >= 1 && step < state.progress.totalSteps && step == state.progress.step)
        #expect(location.hasPrefix("layers.") || location == "loss", "\(location)")
        #expect(state.loss.map { !$0.isFinite } == true)
        vm.handle(event: .resume)  // nothing to go on with
        #expect(vm.viewState.ignoredEvents.last?.event == .resume)
        vm.handle(event: .reset)
        #expect(try await waitUntil(vm) { $0.phase == .idle }.progress.step == 0)
    }

    @Test("The parent hands out one live view model per layer; a layer's check reaches the parent")
    func layerHierarchy() async throws {
        let vm = TrainingViewModel(engine: try xorEngine(epochs: 10), policy: .every(1))
        let first = vm.layer(0), second = vm.layer(1)
        #expect(vm.layer(0) === first)
        #expect(second.viewState.statistics.title == "Dense(4→1, tanh)")
        let before = first.viewState.statistics.weightNorm
        vm.handle(event: .start)
        _ = try await waitUntil(vm) { $0.phase == .finished }
        #expect(first.viewState.statistics.weightNorm != before && first.viewState == vm.viewState.layer(0))
        second.handle(event: .checkGradients)
        let checked = try await waitUntil(vm) { $0.gradientCheck != nil }
        #expect(checked.gradientCheck?.passed == true)
        #expect(second.viewState.gradientCheck.map(\.name) == ["layers.1.weight", "layers.1.bias"])
    }

    @Test("checkGradients while running is done at a step boundary")
    func checkWhileRunning() async throws {
        let vm = TrainingViewModel(engine: try xorEngine(epochs: endless), policy: .every(100))
        vm.handle(event: .start)
        _ = try await waitUntil(vm) { $0.progress.step >= 100 }
        vm.handle(event: .checkGradients)
        let state = try await waitUntil(vm) { $0.gradientCheck != nil }
        #expect(state.gradientCheck?.passed == true && state.phase == .running)
        vm.handle(event: .stop)
        _ = try await waitUntil(vm) { $0.phase == .stopped }
        #expect(vm.viewState.gradientCheck != nil)  // kept across the run's end
    }

    @Test("Every n-th epoch end is kept as a copy of the engine at that step, none dropped, even with no snapshot between them")
    func epochEndsKept() async throws {
        let engine = try xorEngine(epochs: 60)  // one step an epoch
        // A snapshot only at the end: the newest-only snapshots could carry none of these epoch ends.
        let vm = TrainingViewModel(engine: engine, policy: .every(1_000_000), epochEndsEvery: 7)
        vm.handle(event: .start)
        let final = try await waitUntil(vm) { $0.phase == .finished }
        #expect(vm.epochEnds.map(\.epoch) == [7, 14, 21, 28, 35, 42, 49, 56])
        for kept in vm.epochEnds {
            #expect(kept.records.count == kept.epoch)
            #expect(kept.network.parameters == straightRun(engine, steps: kept.stepsTaken).network.parameters)
        }
        #expect(final.records == straightRun(engine).records)
        #expect(vm.takeEpochEnds().count == 8 && vm.epochEnds.isEmpty)
    }

    @Test("Keeping only the newest epoch end holds one copy, the last, however many epochs pass untaken")
    func newestEpochEndOnly() async throws {
        let engine = try xorEngine(epochs: 60)  // one step an epoch
        let vm = TrainingViewModel(engine: engine, policy: .every(1_000_000), epochEndsEvery: 7, keepingOnlyNewestEpochEnd: true)
        vm.handle(event: .start)
        _ = try await waitUntil(vm) { $0.phase == .finished }
        #expect(vm.epochEnds.map(\.epoch) == [56])
        #expect(vm.epochEnds.first?.network.parameters == straightRun(engine, steps: 56).network.parameters)
        #expect(vm.takeEpochEnds().count == 1 && vm.epochEnds.isEmpty)
    }

    @Test("Epoch ends of successive runs add up in order; reset forgets those not taken")
    func epochEndsAcrossRuns() async throws {
        let vm = TrainingViewModel(engine: try xorEngine(epochs: 40), policy: .every(1), epochEndsEvery: 10)
        vm.handle(event: .step(count: 25))
        _ = try await waitUntil(vm) { $0.phase == .paused }
        #expect(vm.epochEnds.map(\.epoch) == [10, 20])
        vm.handle(event: .resume)
        _ = try await waitUntil(vm) { $0.phase == .finished }
        #expect(vm.epochEnds.map(\.epoch) == [10, 20, 30, 40])
        vm.handle(event: .reset)
        #expect(vm.epochEnds.isEmpty && vm.viewState.records.isEmpty)
    }

    @Test("Without epochEndsEvery nothing is kept")
    func noEpochEnds() async throws {
        let vm = TrainingViewModel(engine: try xorEngine(epochs: 20), policy: .every(5))
        vm.handle(event: .start)
        let final = try await waitUntil(vm) { $0.phase == .finished }
        #expect(vm.epochEnds.isEmpty && final.records.count == 20)
    }

    @Test("The neuron trains as the network it is: Docs/Reference.md §3's run ends at 0.1000000000000007, with no seed to show")
    func neuron() async throws {
        let vm = TrainingViewModel(engine: try neuronEngine(), policy: .default)
        // Before training: net = 0.01·0.5 + 0.5, output = tanh(net).
        #expect(vm.viewState.neuron?.net == 0.505 && vm.viewState.neuron?.output == Double.libmTanh(0.505))
        #expect(vm.viewState.progress.totalSteps == 100_000 && vm.viewState.progress.seed == nil)
        vm.handle(event: .start)
        let final = try await waitUntil(vm) { $0.phase == .finished }
        let row = try #require(final.neuron)
        #expect(row.output == 0.1000000000000007)
        #expect(row.weight == 0.4959537581015022 && row.bias == 0.09537581015006125)
        #expect(final.progress.step == 100_000)
        #expect(final.lossHistory.points.count <= final.lossHistory.capacity && final.lossHistory.stride > 1)
    }
}

@Suite("Loss history")
struct LossHistoryTests {
    @Test("Stays within its capacity by merging neighbours and doubling the stride")
    func decimation() {
        var history = LossHistory(capacity: 4)
        for step in 1...8 { history.append(step: step, loss: Double(step)) }
        // 1..4 fill it → merged to [1.5@2, 3.5@4], stride 2; 5..8 arrive in pairs → [5.5@6, 7.5@8],
        // filling it again → [2.5@4, 6.5@8], stride 4.
        #expect(history.points.map(\.loss) == [2.5, 6.5] && history.points.map(\.step) == [4, 8] && history.stride == 4)
        for step in 9...1000 { history.append(step: step, loss: 1) }
        #expect(history.points.count < 4 && history.points.last!.step <= 1000)
    }
}
