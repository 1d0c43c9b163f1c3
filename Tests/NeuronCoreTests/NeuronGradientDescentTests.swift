import Testing

@testable import NeuronCore

@Suite("Gradient descent on one neuron (Docs/Reference.md §3)")
struct NeuronGradientDescentTests {
    @Test("Learning rate 0.01 for 100,000 iterations: the reference trajectory, bit for bit")
    func referenceSlow() throws {
        var neuron = Neuron<Double>(weight: 0.5, bias: 0.5)
        let history = try neuron.train(inputs: [0.01], target: 0.1, learningRate: 0.01, iterations: 100_000)
        #expect(neuron.weights == [0.4959537581015022])
        #expect(neuron.bias == 0.09537581015006125)
        #expect(try neuron.forward(inputs: [0.01], target: 0.1).output == 0.1000000000000007)
        #expect(history.count == 100_000)
        #expect(history[0] == (0.5 * 0.01 + 0.5).tanhLoss(target: 0.1))
        #expect(history.last! < 1e-20)
    }

    @Test("Learning rate 0.1 for 1,000 iterations reaches 0.10000000000000005")
    func referenceFast() throws {
        var neuron = Neuron<Double>(weight: 0.5, bias: 0.5)
        let history = try neuron.train(inputs: [0.01], target: 0.1, learningRate: 0.1, iterations: 1_000)
        #expect(try neuron.forward(inputs: [0.01], target: 0.1).output == 0.10000000000000005)
        // On this run every step lowers the loss.
        #expect(zip(history, history.dropFirst()).allSatisfy { $0 >= $1 })
    }

    @Test("One step by hand: w -= lr·x·g, b -= lr·g")
    func oneStep() throws {
        // net = 0, output = 0, error = -1, g = (1 - 0)·(-1) = -1: w += 0.5·2, b += 0.5
        var neuron = Neuron<Double>(weights: [0], bias: 0)
        let loss = try neuron.step(inputs: [2], target: 1, learningRate: 0.5)
        #expect(loss == 0.5 && neuron.weights == [1] && neuron.bias == 0.5)
    }

    @Test("Float training learns the same task")
    func float() throws {
        var neuron = Neuron<Float>(weight: 0.5, bias: 0.5)
        try neuron.train(inputs: [0.01], target: 0.1, learningRate: 0.1, iterations: 1_000)
        expectClose(try neuron.forward(inputs: [0.01], target: 0.1).output, 0.1, tolerance: 1e-6)
    }

    @Test("Hyperparameters are checked at the door")
    func badHyperparameters() {
        var neuron = Neuron<Double>(weight: 0.5, bias: 0.5)
        #expect(throws: NeuronError.self) { try neuron.train(inputs: [1], target: 0, learningRate: 0, iterations: 1) }
        #expect(throws: NeuronError.self) { try neuron.train(inputs: [1], target: 0, learningRate: .nan, iterations: 1) }
        #expect(throws: NeuronError.self) { try neuron.train(inputs: [1], target: 0, learningRate: 0.1, iterations: -1) }
        #expect(throws: NeuronError.inputCount(expected: 1, actual: 2)) {
            try neuron.train(inputs: [1, 2], target: 0, learningRate: 0.1, iterations: 1)
        }
        #expect(neuron == Neuron(weight: 0.5, bias: 0.5))  // nothing changed by a refused call
    }
}

private extension Double {
    /// `(tanh(self) - target)² / 2`, written out for the first loss of the history.
    func tanhLoss(target: Double) -> Double {
        let e = Double.libmTanh(self) - target
        return e * e / 2
    }
}
