import Testing

@testable import NeuronCore

@Suite("Network: a fold over layers")
struct NetworkTests {
    @Test("Describes itself and lays out its parameters in one buffer")
    func layout() throws {
        let network = try Network<Float>(features: 784, layers: [(256, .tanh), (10, .softmax)], loss: .softmaxCrossEntropy, seed: 1)
        #expect("\(network)" == "Network[Dense(784→256, tanh), Dense(256→10, softmax)]")
        #expect(network.parameterTensors.map(\.name) == ["layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias"])
        #expect(network.parameterTensors.map(\.offset) == [0, 200_704, 200_960, 203_520])
        #expect(network.parameterCount == 203_530 && network.gradients.count == 203_530)
        let bias = network.parameterTensors[1]
        #expect(network.parameter(bias).scalars.allSatisfy { $0 == 0 })
    }

    @Test("Impossible networks are refused with a message saying why")
    func refused() throws {
        #expect(
            throws: NetworkError.layersDoNotChain(index: 0, layer: "Dense(2→3, tanh)", outputShape: [3], next: "Dense(4→1, tanh)", inputShape: [4])
        ) {
            try Network<Double>([try Dense<Double>(2, 3), try Dense<Double>(4, 1)], loss: .halfSquaredError)
        }
        #expect(throws: NetworkError.self) {
            try Network<Double>(features: 2, layers: [(3, .softmax), (2, .softmax)], loss: .softmaxCrossEntropy, seed: 0)
        }
        #expect(throws: NetworkError.self) { try Network<Double>(features: 2, layers: [(2, .tanh)], loss: .softmaxCrossEntropy, seed: 0) }
        #expect(throws: NetworkError.self) { try Network<Double>(features: 2, layers: [(2, .softmax)], loss: .halfSquaredError, seed: 0) }
        #expect(throws: NetworkError.self) { try Network<Double>([], loss: .halfSquaredError) }
    }

    @Test("A batch of the wrong shape names both shapes")
    func wrongBatch() throws {
        var network = try Network<Double>(features: 3, layers: [(2, .tanh)], loss: .halfSquaredError, seed: 0)
        do {
            try network.forward(Tensor(zeros: [4, 5]))
            Issue.record("expected a shape error")
        } catch {
            #expect(error.description.contains("(4, 5)") && error.description.contains("(batch ≥ 1, 3)"), "\(error)")
        }
        do {
            try network.lossAndGradients(Tensor(zeros: [4, 3]), targets: Tensor(zeros: [4, 3]))
            Issue.record("expected a shape error")
        } catch {
            #expect(error.description.contains("(4, 3)") && error.description.contains("(4, 2)"), "\(error)")
        }
    }

    @Test("The same seed gives the same network; Float → Double conversion is exact")
    func seeded() throws {
        let a = try Network<Float>(features: 5, layers: [(4, .relu), (3, .softmax)], loss: .softmaxCrossEntropy, seed: 7)
        let b = try Network<Float>(features: 5, layers: [(4, .relu), (3, .softmax)], loss: .softmaxCrossEntropy, seed: 7)
        #expect(a.parameters == b.parameters)
        #expect(a.converted(to: Double.self).parameters == a.parameters.map(Double.init))
        #expect("\(a.converted(to: Double.self))" == "\(a)")
    }

    @Test("The whole batch in one pass equals one sample at a time")
    func batchEqualsSamples() throws {
        var network = try Network<Double>(features: 4, layers: [(6, .tanh), (3, .sigmoid)], loss: .halfSquaredError, seed: 3)
        var generator = SeededGenerator(seed: 8)
        let x = Tensor<Double>.random([5, 4], using: &generator), t = Tensor<Double>.random([5, 3], using: &generator)
        let batchLoss = try network.lossAndGradients(x, targets: t)
        let batchGradients = network.gradients
        var sumLoss = 0.0
        var sumGradients = [Double](repeating: 0, count: network.parameterCount)
        for n in 0..<5 {
            let xn = try Tensor(rows: [Array(x.rowArrays[n])]), tn = try Tensor(rows: [Array(t.rowArrays[n])])
            sumLoss += try network.lossAndGradients(xn, targets: tn)
            for i in sumGradients.indices { sumGradients[i] += network.gradients[i] }
        }
        // The batch loss and gradients are means over the samples.
        expectClose(batchLoss, sumLoss / 5, tolerance: 1e-15)
        expectClose(batchGradients, sumGradients.map { $0 / 5 }, tolerance: 1e-15)
    }

    @Test("A sequence network's buffers are sized by the first batch and kept: a smaller batch and full ones again move none")
    func sequenceBuffersKept() throws {
        var network = try Network<Float>(
            [
                try Embedding<Float>(vocabulary: 7, features: 4, time: 6), try PositionEmbedding<Float>(time: 6, features: 4),
                try ContextWindow<Float>(time: 6, features: 4, size: 3), try Dense<Float>(12, 5, activation: .tanh, time: 6),
                try Dense<Float>(5, 7, activation: .identity, time: 6),
            ], loss: .sequenceCrossEntropy)
        network.initialize(seed: 1)
        var generator = SeededGenerator(seed: 2)
        func batch(_ rows: Int) -> (Tensor<Float>, Tensor<Float>) {
            var x = Tensor<Float>(zeros: [rows, 6]), t = x
            for i in 0..<x.count {
                x[i] = Float(generator.index(below: 7))
                t[i] = generator.index(below: 5) == 0 ? -1 : Float(generator.index(below: 7))
            }
            return (x, t)
        }
        let (x, t) = batch(8), (small, smallTargets) = batch(3)
        try network.lossAndGradients(x, targets: t, inputGradient: true)
        // Each buffer's address and capacity: a buffer made anew for the smaller batch would be smaller.
        func storage() -> [[Int]] {
            (network.layers.flatMap { [$0.output, $0.inputGradient] } + [network.output]).map { tensor in
                [tensor.withUnsafeBufferPointer { Int(bitPattern: $0.baseAddress) }, tensor.scalars.capacity]
            }
        }
        let first = storage()
        for step in 0..<3 {
            try network.lossAndGradients(small, targets: smallTargets, inputGradient: true)
            #expect(storage() == first, "step \(step), the smaller batch, moved a buffer")
            try network.lossAndGradients(x, targets: t, inputGradient: true)
            #expect(storage() == first, "step \(step), a full batch, moved a buffer")
        }
        #expect(network.output.shape == [8, 6, 7])
    }
}
