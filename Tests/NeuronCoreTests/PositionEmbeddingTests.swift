import Testing

@testable import NeuronCore

@Suite("PositionEmbedding: a vector per position added, against the naive loops")
struct PositionEmbeddingTests {
    @Test("Two positions worked by hand: the weight's gradient summed over the batch, dx = dy")
    func handWorked() throws {
        // weight: (2, 2) = [[10, 20], [30, 40]]  x: (2, 2, 2) = 0..<8  →  y = x + weight at each sample
        var h = LayerHarness(try PositionEmbedding<Double>(time: 2, features: 2), seed: 0)
        h.parameters = [10, 20, 30, 40]
        let x = try Tensor<Double>(shape: [2, 2, 2], scalars: [0, 1, 2, 3, 4, 5, 6, 7])
        let y = h.forward(x)
        #expect(y.shape == [2, 2, 2] && y.scalars == [10, 21, 32, 43, 14, 25, 36, 47])
        // dy = 1..<9: dweight = sample 0's + sample 1's = [1 + 5, 2 + 6, 3 + 7, 4 + 8]
        let dy = try Tensor<Double>(shape: [2, 2, 2], scalars: [1, 2, 3, 4, 5, 6, 7, 8])
        h.backward(x, dy, inputGradient: true)
        #expect(h.gradients == [6, 8, 10, 12])
        #expect(h.layer.inputGradient == dy)
    }

    @Test("Fast and naive agree in Float and Double")
    func matchesNaive() throws {
        func check<Scalar: TensorScalar>(_: Scalar.Type) throws {
            var generator = SeededGenerator(seed: 4)
            for (batch, time, features) in [(1, 1, 1), (3, 4, 5), (9, 7, 16)] {
                var h = LayerHarness(try PositionEmbedding<Scalar>(time: time, features: features), seed: 2)
                let x = Tensor<Scalar>.random([batch, time, features], using: &generator)
                let dy = Tensor<Scalar>.random([batch, time, features], using: &generator)
                let weight = try Tensor(shape: [time, features], scalars: h.parameters)
                // One addition per entry, in the same precision: exact.
                #expect(h.forward(x) == Naive.positionEmbeddingForward(x, weight: weight))
                h.backward(x, dy, inputGradient: true)
                let naive = Naive.positionEmbeddingBackward(outputGradient: dy, time: time, features: features)
                expectClose(h.gradients, naive.scalars, tolerance: summationTolerance(Scalar.self, terms: batch))
                #expect(h.layer.inputGradient == dy)
            }
        }
        try check(Float.self)
        try check(Double.self)
    }

    @Test("A table longer than the block: a sample of 2 positions reads and trains the first 2 of 3 rows")
    func longerTable() throws {
        // weight: (3, 2) = [[10, 20], [30, 40], [50, 60]]  x: (1, 2, 2) = [[1, 2], [3, 4]]  →  y = [[11, 22], [33, 44]]
        var h = LayerHarness(try PositionEmbedding<Double>(time: 2, features: 2, positions: 3), seed: 0)
        #expect(h.parameters.count == 6 && h.layer.parameterShapes.map(\.shape) == [[3, 2]])
        #expect("\(h.layer)" == "PositionEmbedding(2 of 3×2)")
        h.parameters = [10, 20, 30, 40, 50, 60]
        let x = try Tensor<Double>(shape: [1, 2, 2], scalars: [1, 2, 3, 4])
        #expect(h.forward(x).scalars == [11, 22, 33, 44])
        // The third row takes no gradient: no sample reaches it.
        let dy = try Tensor<Double>(shape: [1, 2, 2], scalars: [1, 2, 3, 4])
        h.backward(x, dy, inputGradient: true)
        #expect(h.gradients == [1, 2, 3, 4, 0, 0])
        #expect(Naive.positionEmbeddingBackward(outputGradient: dy, time: 2, features: 2, positions: 3).scalars == h.gradients)
        #expect(Naive.positionEmbeddingForward(x, weight: try Tensor(shape: [3, 2], scalars: h.parameters)).scalars == [11, 22, 33, 44])
        #expect(
            message { () throws(NetworkError) in try PositionEmbedding<Double>(time: 4, features: 2, positions: 3) }
                == "PositionEmbedding(4 of 3×2): a table of 3 positions cannot serve samples of 4 positions")
    }

    @Test("N(0, 0.02²), GPT-2's; describes itself; sizes checked")
    func initialisationAndShapes() throws {
        let h = LayerHarness(try PositionEmbedding<Double>(time: 64, features: 64), seed: 3)
        let n = Double(h.parameters.count)
        let deviation = (h.parameters.map { $0 * $0 }.reduce(0, +) / n).squareRoot()
        #expect(abs(deviation - 0.02) < 0.001, "deviation \(deviation)")  // 4,096 draws: its standard error is about 0.0002
        let layer = try PositionEmbedding<Float>(time: 8, features: 64)
        #expect("\(layer)" == "PositionEmbedding(8×64)" && layer.inputShape == [8, 64] && layer.outputShape == [8, 64])
        #expect(layer.parameterShapes.map(\.name) == ["weight"] && layer.parameterShapes.map(\.shape) == [[8, 64]])
        #expect(throws: NetworkError.self) { try PositionEmbedding<Float>(time: 0, features: 3) }
    }
}
