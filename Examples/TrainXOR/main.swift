// XOR on a 2-4-1 tanh network, trained through the view model and watched through `Observations`,
// as an app's screen would: Docs/Library.md's example. CI builds and runs it; it
// exits with status 1 unless the loss ends below 0.001.
import Foundation
import NeuronCore
import NeuronTraining
import Observation

let xor = Synthetic.xor(as: Double.self)
let network = try Network<Double>(features: 2, layers: [(4, .tanh), (1, .tanh)], loss: .halfSquaredError, seed: 1)
let engine = try NetworkTrainingEngine(
    network: network, optimizer: try SGD(learningRate: 0.5, momentum: 0.9),
    dataset: xor, batchSize: 4, epochs: 1_000, seed: 1)
let model = TrainingViewModel(engine: engine)

model.handle(event: .start)
var final = model.viewState
for await state in Observations({ model.viewState }) {
    if let loss = state.loss { print("\(state.phase)  step \(state.progress.step)/\(state.progress.totalSteps)  loss \(loss)") }
    final = state
    if !state.isRunning { break }
}

var trained = model.engine!.network
let predictions = try trained.forward(xor.features)
for (input, output) in zip(xor.features.rowArrays, predictions.scalars) { print("\(input) → \(output)") }
guard final.phase == .finished, let loss = final.loss, loss < 0.001 else {
    print("XOR did not train: \(final.phase), loss \(final.loss ?? .nan)")
    exit(1)
}
