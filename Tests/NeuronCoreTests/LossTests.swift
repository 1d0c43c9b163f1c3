import Testing

@testable import NeuronCore

@Suite("Losses")
struct LossTests {
    @Test("Half-squared error by hand: Σ (y - t)² / 2 per sample, mean over the batch")
    func halfSquaredError() throws {
        let y: [Double] = [1, 2, 0, 0], t: [Double] = [0, 0, 0, 1]
        var g = [Double](repeating: 0, count: 4)
        // (1 + 4) / 2 + (0 + 1) / 2 = 3, over a batch of 2 = 1.5
        let value = y.withUnsafeBufferPointer { y in
            t.withUnsafeBufferPointer { t in
                g.withUnsafeMutableBufferPointer { Kernels.halfSquaredError(output: y, targets: t, batch: 2, gradient: $0) }
            }
        }
        #expect(value == 1.5)
        #expect(g == [0.5, 1, 0, -0.5])
    }

    @Test("Softmax cross-entropy by hand, and stable for huge logits")
    func crossEntropy() throws {
        let z: [Double] = [0, 0, 1000, 0], t: [Double] = [1, 0, 0, 1]
        var p = z
        p.withUnsafeMutableBufferPointer { Kernels.softmaxRows($0, columns: 2) }
        var g = [Double](repeating: 0, count: 4)
        // Row 1: -log(1/2) = log 2. Row 2: -log softmax(z)₁ = 1000 + log(1 + e^-1000) = 1000. Mean: (log 2 + 1000) / 2.
        let value = z.withUnsafeBufferPointer { z in
            p.withUnsafeBufferPointer { p in
                t.withUnsafeBufferPointer { t in
                    g.withUnsafeMutableBufferPointer {
                        Kernels.softmaxCrossEntropy(logits: z, probabilities: p, targets: t, columns: 2, gradient: $0)
                    }
                }
            }
        }
        #expect(value == (Double.libmLog(2) + 1000) / 2)
        // (p - t) / batch: row 1 ([0.5, 0.5] - [1, 0]) / 2, row 2 ([1, 0] - [0, 1]) / 2.
        #expect(g == [-0.25, 0.25, 0.5, -0.5])
    }

    // The sequence loss takes a class index per position: SequenceLossTests.
    @Test("Both losses through a network equal their definitions from the output", arguments: [Loss.halfSquaredError, .softmaxCrossEntropy])
    func networkMatchesDefinition(loss: Loss) throws {
        var generator = SeededGenerator(seed: 8)
        var network = try Network<Double>(
            features: 3, layers: [(4, .tanh), (3, loss == .softmaxCrossEntropy ? .softmax : .identity)], loss: loss, seed: 5)
        let x = Tensor<Double>.random([5, 3], using: &generator)
        var t = Tensor<Double>(zeros: [5, 3])
        for n in 0..<5 { t[n, n % 3] = 1 }
        let value = try network.loss(x, targets: t)
        let y = try network.forward(x)
        if loss == .softmaxCrossEntropy {
            for n in 0..<5 { expectClose((0..<3).map { y[n, $0] }.reduce(0, +), 1, tolerance: 1e-15) }  // probabilities
        }
        expectClose(value, Naive.loss(loss, output: y, targets: t), tolerance: 1e-14)
    }
}
