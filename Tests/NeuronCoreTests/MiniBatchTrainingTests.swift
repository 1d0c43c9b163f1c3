import Foundation
import Testing

@testable import NeuronCore

@Suite("Training networks")
struct MiniBatchTrainingTests {
    @Test("One engine, one neuron: Network[Dense(1→1, tanh)] follows the neuron bit for bit for 100,000 steps")
    func oneEngineOneNeuron() throws {
        var neuron = Neuron<Double>(weight: 0.5, bias: 0.5)
        var network = try Network<Double>([try Dense<Double>(1, 1, activation: .tanh)], loss: .halfSquaredError)
        network.parameters = [0.5, 0.5]  // weight, bias
        let x = try Tensor<Double>(rows: [[0.01]]), t = try Tensor<Double>(rows: [[0.1]])

        // The same gradients, through both paths.
        let forward = try neuron.forward(inputs: [0.01], target: 0.1)
        let gradients = neuron.backward(forward)
        let loss = try network.lossAndGradients(x, targets: t, inputGradient: true)
        #expect(loss == forward.loss)
        #expect(network.gradients == [gradients.weights[0], gradients.bias])
        #expect(network.inputGradient.scalars == gradients.inputs)
        #expect(network.layers[0].output.scalars == [forward.output])

        // The same trajectory: SGD over the flat buffer against the neuron's own update.
        var sgd = try SGD<Double>(learningRate: 0.01)
        for i in 0..<100_000 {
            let networkLoss = try network.trainStep(x, targets: t, optimizer: &sgd)
            let neuronLoss = try neuron.step(inputs: [0.01], target: 0.1, learningRate: 0.01)
            if networkLoss != neuronLoss || network.parameters != [neuron.weights[0], neuron.bias] {
                Issue.record("paths part at step \(i): \(network.parameters) vs \(neuron.weights[0]), \(neuron.bias)")
                break
            }
        }
        #expect(network.parameters == [0.4959537581015022, 0.09537581015006125])
        #expect(try network.forward(x).scalars == [0.1000000000000007])
    }

    @Test("XOR with 2-4-1 tanh reaches loss < 1e-3")
    func xor() throws {
        let data = Synthetic.xor(as: Double.self)
        let network = try Network<Double>(features: 2, layers: [(4, .tanh), (1, .tanh)], loss: .halfSquaredError, seed: 1)
        var training = try MiniBatchTraining(
            network: network, optimizer: try SGD<Double>(learningRate: 0.5, momentum: 0.9),
            dataset: data, batchSize: 4, seed: 1)
        let first = training.finishEpoch()
        for _ in 0..<999 { training.finishEpoch() }
        let final = try training.network.evaluate(data).loss
        #expect(final < 1e-3, "XOR loss \(first) → \(final)")
        // The outputs read as XOR: near 0 for equal inputs, near 1 otherwise.
        let y = try training.network.forward(data.features).scalars
        #expect(y[0] < 0.1 && y[1] > 0.9 && y[2] > 0.9 && y[3] < 0.1, "\(y)")
    }

    @Test("digits with 64-32-10: validation accuracy ≥ 0.95 on a held-out 20%")
    func digits() throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Data/digits.csv").standardized.path
        let all = try CSV.load(path, labelColumn: "digit", task: .classification, as: Float.self)
        var generator = SeededGenerator(seed: 2024)
        var (train, validation) = try all.split(validationFraction: 0.2, generator: &generator)
        let standardizer = Standardizer(fitting: train.features)  // fitted on training rows only
        try standardizer.apply(to: &train)
        try standardizer.apply(to: &validation)
        let network = try Network<Float>(features: 64, layers: [(32, .tanh), (10, .softmax)], loss: .softmaxCrossEntropy, seed: 7)
        var training = try MiniBatchTraining(
            network: network, optimizer: try SGD<Float>(learningRate: 0.05, momentum: 0.9),
            dataset: train, batchSize: 32, seed: 7)
        for _ in 0..<20 { training.finishEpoch() }
        let evaluation = try training.network.evaluate(validation)
        #expect(validation.count == 359 && train.count == 1_438)
        let accuracy = try #require(evaluation.accuracy)
        #expect(accuracy >= 0.95, "validation accuracy \(accuracy), loss \(evaluation.loss)")
        #expect(evaluation.confusion?.total == 359)
    }

    @Test("Stopping after any step and going on gives the numbers of a run that never stopped")
    func exactContinuation() throws {
        var generator = SeededGenerator(seed: 3)
        let data = try Synthetic.sine(count: 50, generator: &generator) as Dataset<Float>
        let network = try Network<Float>(features: 1, layers: [(8, .tanh), (1, .identity)], loss: .halfSquaredError, seed: 3)
        let start = try MiniBatchTraining(network: network, optimizer: try Adam<Float>(learningRate: 0.01), dataset: data, batchSize: 16, seed: 5)
        var straight = start
        for _ in 0..<40 { straight.step() }
        var interrupted = start
        for _ in 0..<17 { interrupted.step() }
        var resumed = interrupted  // a copy of everything that decides the next step
        for _ in 0..<23 { resumed.step() }
        #expect(resumed.network.parameters == straight.network.parameters)
        #expect(resumed.epoch == straight.epoch && resumed.epoch == 10)  // 4 batches per epoch
    }

    @Test("Clipping: a limit no step reaches leaves the run unchanged; a small one scales each step's gradients to it")
    func clipping() throws {
        var generator = SeededGenerator(seed: 3)
        let data = try Synthetic.sine(count: 50, generator: &generator) as Dataset<Double>
        let network = try Network<Double>(features: 1, layers: [(8, .tanh), (1, .identity)], loss: .halfSquaredError, seed: 3)
        let start = try MiniBatchTraining(network: network, optimizer: try SGD<Double>(learningRate: 0.1), dataset: data, batchSize: 16, seed: 5)
        var plain = start, loose = start, tight = start
        loose.maximumGradientNorm = 1e6
        tight.maximumGradientNorm = 0.01
        for _ in 0..<8 {
            plain.step()
            loose.step()
            let before = tight.network.parameters
            tight.step()
            // SGD: the step moved p by lr·(clipped g); its norm is lr·0.01·norm/(norm + 1e-6) ≈ 0.001.
            let moved = zip(before, tight.network.parameters).map { $0 - $1 }.reduce(0) { $0 + $1 * $1 }.squareRoot()
            let norm = tight.lastGradientNorm!
            #expect(norm > 0.01)
            expectClose(moved, 0.1 * 0.01 * norm / (norm + 1e-6), tolerance: 1e-12)
        }
        #expect(loose.network.parameters == plain.network.parameters)
        #expect(loose.lastGradientNorm != nil && plain.lastGradientNorm == nil)

        // A shared step clips the combined gradients: the whole batch as the share is step() bit for bit.
        var stepped = start, shared = start
        (stepped.maximumGradientNorm, shared.maximumGradientNorm) = (0.01, 0.01)
        for _ in 0..<8 { #expect(shared.step(share: { $0 }, combine: { _, _ in }) == stepped.step()) }
        #expect(shared.network.parameters == stepped.network.parameters && shared.network.parameters == tight.network.parameters)
    }

    @Test("The whole batch as the share, with nothing to combine, is step() bit for bit")
    func wholeShareIsStep() throws {
        var generator = SeededGenerator(seed: 3)
        let data = try Synthetic.sine(count: 50, generator: &generator) as Dataset<Float>
        let network = try Network<Float>(features: 1, layers: [(8, .tanh), (1, .identity)], loss: .halfSquaredError, seed: 3)
        var stepped = try MiniBatchTraining(network: network, optimizer: try Adam<Float>(learningRate: 0.01), dataset: data, batchSize: 16, seed: 5)
        var shared = stepped
        for _ in 0..<12 {
            #expect(shared.step(share: { $0 }, combine: { _, _ in }) == stepped.step())
        }
        #expect(shared.network.parameters == stepped.network.parameters)
        #expect(shared.epochProgress == stepped.epochProgress)
    }

    @Test(
        "Shares of each batch, weighted and summed, reach the whole batch's steps within 1e-12 (Double), empty shares included",
        arguments: [4, 2])
    func sharesSumToTheBatch(batchSize: Int) throws {
        // 7 samples on 3 shares: batches of 4 give shares (1, 1, 2) and (1, 1, 1); batches of 2
        // give (0, 1, 1) and a last batch of 1, (0, 0, 1).
        var generator = SeededGenerator(seed: 3)
        let data: Dataset<Double> = try Synthetic.sine(count: 7, generator: &generator)
        let network = try Network<Double>(features: 1, layers: [(8, .tanh), (1, .identity)], loss: .halfSquaredError, seed: 5)
        var alone = try MiniBatchTraining(
            network: network, optimizer: try SGD<Double>(learningRate: 0.1, momentum: 0.9), dataset: data, batchSize: batchSize, seed: 9)
        var parts = Array(repeating: alone, count: 3)
        // Share r of a batch: the r-th of 3 contiguous pieces (as a group of 3 processes cuts it).
        func share(_ r: Int) -> (Range<Int>) -> Range<Int> {
            { b in b.lowerBound + b.count * r / 3..<b.lowerBound + b.count * (r + 1) / 3 }
        }
        for _ in 0..<20 * alone.batchesPerEpoch {
            let loss = alone.step()
            // Each part's weighted gradients and totals for this step, from a copy (a step is a
            // function of the value), then the step itself with their sum.
            let contributions = (0..<3).map { r in
                var copy = parts[r], seen: ([Double], BatchTotals) = ([], BatchTotals(loss: 0, correct: 0))
                copy.step(share: share(r)) { seen = ($0, $1) }
                return seen
            }
            for r in 0..<3 {
                let partLoss = parts[r].step(share: share(r)) { gradients, totals in
                    for i in gradients.indices { gradients[i] = contributions.reduce(0) { $0 + $1.0[i] } }
                    totals.loss = contributions.reduce(0) { $0 + $1.1.loss }
                }
                #expect(abs(partLoss - loss) <= 1e-12 * abs(loss))
            }
        }
        let scale = alone.network.parameters.map(abs).max()!
        for part in parts {
            let difference = zip(alone.network.parameters, part.network.parameters).map { abs($0 - $1) }.max()!
            #expect(difference <= 1e-12 * scale)
            #expect(part.network.parameters == parts[0].network.parameters)
            #expect(part.epochProgress.samples == alone.epochProgress.samples)
        }
    }

    @Test("A saved position or optimizer state that does not fit is refused, not left to trap in a later step")
    func badPosition() throws {
        let network = try Network<Double>(features: 2, layers: [(3, .tanh), (1, .tanh)], loss: .halfSquaredError, seed: 1)
        let data = Synthetic.xor(as: Double.self)
        var training = try MiniBatchTraining(
            network: network, optimizer: try SGD<Double>(learningRate: 0.1, momentum: 0.9), dataset: data, batchSize: 2, seed: 1)
        for _ in 0..<3 { training.step() }  // epoch 1, batch 1
        func resumed(_ position: TrainingPosition, optimizer: SGD<Double>? = nil) throws {
            _ = try MiniBatchTraining(network: training.network, optimizer: optimizer ?? training.optimizer, dataset: data, position: position)
        }
        try resumed(training.position)
        for edit in [\TrainingPosition.batchIndex, \.epoch, \.stepsTaken] {
            for value in [-1, 7, Int.max] {
                var position = training.position
                position[keyPath: edit] = value
                #expect(throws: DataError.self, "\(edit) = \(value)") { try resumed(position) }
            }
        }
        // A velocity one value short: SGD's update would stop on its precondition.
        var short = try SGD<Double>(learningRate: 0.1, momentum: 0.9)
        try short.restore(state: ["velocity": [0, 0, 0]], step: 3)
        #expect(throws: OptimizerError.stateCount(name: "velocity", expected: 13, actual: 3)) { try resumed(training.position, optimizer: short) }
    }

    @Test("A dataset that does not fit the network is refused")
    func mismatch() throws {
        let network = try Network<Double>(features: 3, layers: [(1, .tanh)], loss: .halfSquaredError, seed: 0)
        #expect(throws: NetworkError.self) {
            try MiniBatchTraining(
                network: network, optimizer: try SGD<Double>(learningRate: 0.1), dataset: Synthetic.xor(as: Double.self), batchSize: 2, seed: 0)
        }
    }
}
