import NeuronCore
import Observation
import Testing
@testable import NeuronTraining

struct TimedOut: Error, CustomStringConvertible {
    var waited: Duration
    var last: String
    var description: String { "condition not met within \(waited); last state: \(last)" }
}

/// Waits, through `Observations`, until the model's state satisfies `condition`; fails after `timeout`.
/// The timeout is the only clock involved: no sleeping stands in for synchronisation.
@MainActor
func waitUntil<M: ViewModel>(
    _ model: M, timeout: Duration = .seconds(60), _ condition: @escaping @Sendable (M.ViewState) -> Bool
) async throws -> M.ViewState {
    let watcher = Task { @MainActor () -> M.ViewState? in
        for await state in Observations({ model.viewState }) where condition(state) { return state }
        return nil  // cancelled by the timeout
    }
    let timer = Task {
        try await Task.sleep(for: timeout)
        watcher.cancel()
    }
    defer { timer.cancel() }
    guard let state = await watcher.value else { throw TimedOut(waited: timeout, last: "\(model.viewState)") }
    return state
}

/// XOR with 2-4-1 tanh, SGD with momentum, full batches (one step per epoch).
func xorEngine(epochs: Int, learningRate: Double = 0.5, seed: UInt64 = 1) throws -> NetworkTrainingEngine<Double, SGD<Double>> {
    let network = try Network<Double>(inputSize: 2, layers: [(4, .tanh), (1, .tanh)], loss: .halfSquaredError, seed: seed)
    return try NetworkTrainingEngine(
        network: network, optimizer: try SGD<Double>(learningRate: learningRate, momentum: 0.9),
        dataset: Synthetic.xor(as: Double.self), batchSize: 4, epochs: epochs, seed: seed)
}

/// The engine run straight through (or for exactly `steps` steps), with no view model: the
/// reference for exactness.
func straightRun<E: TrainingEngine>(_ engine: E, steps: Int? = nil) -> E {
    var engine = engine
    while !engine.isFinished && engine.stepsTaken < (steps ?? .max) { engine.step() }
    return engine
}

/// Planned steps no test can reach: a run that only ends when a test stops it, however slow or
/// fast the machine, so reacting to a state can never come too late.
let endless = 10_000_000
