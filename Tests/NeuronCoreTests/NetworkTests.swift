import Foundation
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

    @Test("Weight decay's matrices: products' weights only, adjacent tensors merged, through residual blocks")
    func decayedRanges() throws {
        // Embedding 0..<20, LayerNorm 20..<28, Dense weight 28..<48 and bias 48..<53.
        #expect(try EmbeddingNormDense<Float>().decayedRanges == [28..<48])
        #expect(try EmbeddingNormDense<Float>().network.parameterTensors.filter(\.isDecayed).map(\.name) == ["layers.2.weight"])

        // RNN(3→4): weight_ih 0..<12 and weight_hh 12..<28 adjacent, one range; its biases and h0
        // 28..<40; the dense weight 40..<48.
        let recurrent = try Network<Float>(
            [try RNN(time: 2, inputs: 3, hidden: 4), try Dense(4, 2, activation: .identity, time: 2)], loss: .halfSquaredError)
        #expect(recurrent.decayedRanges == [0..<28, 40..<48])

        // Embedding 0..<20; in the block, LayerNorm 20..<28, attention's c_attn.weight 28..<76,
        // c_attn.bias 76..<88, c_proj.weight 88..<104, c_proj.bias 104..<108; the head's weight 108..<128.
        let gpt = try Network<Float>(
            [
                try Embedding(vocabulary: 5, features: 4, time: 3),
                try Residual([try LayerNorm(shape: [3, 4]), try CausalSelfAttention(time: 3, features: 4, heads: 2)]),
                try Dense(4, 5, activation: .identity, time: 3),
            ], loss: .sequenceCrossEntropy)
        #expect(gpt.decayedRanges == [28..<76, 88..<104, 108..<128])
        #expect(
            gpt.parameterTensors.filter(\.isDecayed).map(\.name) == [
                "layers.1.body.1.c_attn.weight", "layers.1.body.1.c_proj.weight", "layers.2.weight",
            ])
    }

    @Test("Clipping the global norm, by hand: g = [3, -4] (norm 5) to 1 gives [0.6, -0.8]; below the limit nothing moves")
    func clipGradientNorm() throws {
        func check<Scalar: TensorScalar>(_: Scalar.Type) throws {
            var g: [Scalar] = [3, -4]
            let norm = g.withUnsafeMutableBufferPointer { Kernels.clipGradientNorm($0, maximum: 1) }
            #expect(norm == 5)
            // PyTorch's factor max/(norm + 1e-6) = 1/5.000001, a hair under 1/5.
            let c = Scalar(1 / 5.000001)
            #expect(g == [3 * c, -4 * c])
            expectClose(g, [0.6, -0.8], tolerance: 1e-6)

            // Norm 5 against a limit of 5: the factor 5/5.000001 is below 1, so PyTorch scales (by 1 - 2e-7).
            var atLimit: [Scalar] = [3, -4]
            _ = atLimit.withUnsafeMutableBufferPointer { Kernels.clipGradientNorm($0, maximum: 5) }
            #expect(atLimit == [3 * Scalar(5 / 5.000001), -4 * Scalar(5 / 5.000001)])

            // Above the norm (factor 5.1/5.000001 > 1): unchanged, bit for bit.
            var below: [Scalar] = [3, -4]
            #expect(below.withUnsafeMutableBufferPointer { Kernels.clipGradientNorm($0, maximum: 5.1) } == 5)
            #expect(below == [3, -4])
        }
        try check(Float.self)
        try check(Double.self)

        // Against torch.nn.utils.clip_grad_norm_([p], 1.5) with p.grad = 3·cos(i), i < 10, in float64 (PyTorch 2.x).
        var g = (0..<10).map { 3 * cos(Double($0)) }
        #expect(g.withUnsafeMutableBufferPointer { Kernels.clipGradientNorm($0, maximum: 1.5) } == 6.902952630611777)
        let torch: [Double] = [
            0.65189486135968511, 0.35222029677622918, -0.27128398431617096, -0.64537102131847601, -0.42610691760152691,
            0.18491792106553517, 0.6259300758976295, 0.49146500557388262, -0.094850724367495629, -0.59396113575192511,
        ]
        for i in g.indices { expectClose(g[i], torch[i], tolerance: 2 * torch[i].ulp) }

        // The network's clip runs over every layer's gradients at once: one global norm.
        var network = try Network<Double>(features: 2, layers: [(3, .tanh), (1, .identity)], loss: .halfSquaredError, seed: 1)
        try network.lossAndGradients(try Tensor(shape: [2, 2], scalars: [1, -2, 0.5, 3]), targets: try Tensor(shape: [2, 1], scalars: [4, -4]))
        let before = network.gradients
        let norm = before.reduce(0) { $0 + $1 * $1 }.squareRoot()
        #expect(network.clipGradientNorm(maximum: norm / 2) == norm)
        let c = (norm / 2) / (norm + 1e-6)
        #expect(network.gradients == before.map { $0 * c })
        expectClose(network.gradients.reduce(0) { $0 + $1 * $1 }.squareRoot(), norm / 2, tolerance: 1e-6)
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
