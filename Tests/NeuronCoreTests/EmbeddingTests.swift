import Testing

@testable import NeuronCore

@Suite("Embedding: row lookups and their scatter-add against the naive loops")
struct EmbeddingTests {
    @Test("A table of 3 tokens worked by hand: a repeated token gets both gradients, an unused one none")
    func handWorked() throws {
        // weight: (3, 2) = [[0, 1], [2, 3], [4, 5]]  x = [[2, 0, 2]]  →  y = [[[4, 5], [0, 1], [4, 5]]]
        var h = LayerHarness(try Embedding<Double>(vocabulary: 3, features: 2, time: 3), seed: 0)
        h.parameters = [0, 1, 2, 3, 4, 5]
        let x = try Tensor<Double>(rows: [[2, 0, 2]])
        let y = h.forward(x)
        #expect(y.shape == [1, 3, 2] && y.scalars == [4, 5, 0, 1, 4, 5])
        // dy = [[[1, 2], [3, 4], [5, 6]]]: row 0 gets position 1's [3, 4], row 1 nothing, row 2
        // positions 0 and 2, [1 + 5, 2 + 6]. Token indices have no gradient: zeros like x.
        h.backward(x, try Tensor(shape: [1, 3, 2], scalars: [1, 2, 3, 4, 5, 6]), inputGradient: true)
        #expect(h.gradients == [3, 4, 0, 0, 6, 8])
        #expect(h.layer.inputGradient.shape == [1, 3] && h.layer.inputGradient.scalars == [0, 0, 0])
        // Backward adds into the gradient buffer: a second pass doubles it.
        h.backward(x, try Tensor(shape: [1, 3, 2], scalars: [1, 2, 3, 4, 5, 6]), inputGradient: false)
        #expect(h.gradients == [6, 8, 0, 0, 12, 16])
    }

    @Test("Fast and naive agree in Float and Double, with tokens repeated within and across sequences")
    func matchesNaive() throws {
        func check<Scalar: TensorScalar>(_: Scalar.Type) throws {
            var generator = SeededGenerator(seed: 3)
            for (batch, time, vocabulary, features) in [(1, 1, 1, 1), (2, 5, 4, 3), (7, 9, 27, 16)] {
                var h = LayerHarness(try Embedding<Scalar>(vocabulary: vocabulary, features: features, time: time), seed: 5)
                var x = Tensor<Scalar>(zeros: [batch, time])
                for i in 0..<x.count { x[i] = Scalar(generator.index(below: vocabulary)) }
                let dy = Tensor<Scalar>.random([batch, time, features], using: &generator)
                let weight = try Tensor(shape: [vocabulary, features], scalars: h.parameters)
                // Copies: exactly the table's rows.
                #expect(h.forward(x) == Naive.embeddingForward(x, weight: weight))
                h.backward(x, dy, inputGradient: false)
                let naive = Naive.embeddingBackward(x, outputGradient: dy, vocabulary: vocabulary)
                expectClose(h.gradients, naive.scalars, tolerance: summationTolerance(Scalar.self, terms: batch * time))
            }
        }
        try check(Float.self)
        try check(Double.self)
    }

    @Test("N(0, 1) as nn.Embedding draws it; the same seed the same table")
    func initialisation() throws {
        let h = LayerHarness(try Embedding<Double>(vocabulary: 100, features: 50, time: 1), seed: 1)
        let n = Double(h.parameters.count)
        let mean = h.parameters.reduce(0, +) / n
        let deviation = (h.parameters.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / n).squareRoot()
        // 5,000 draws: the mean's standard error is 1/√5000 ≈ 0.014, the deviation's about 0.01.
        #expect(abs(mean) < 0.05 && abs(deviation - 1) < 0.05, "mean \(mean), deviation \(deviation)")
        #expect(LayerHarness(try Embedding<Double>(vocabulary: 100, features: 50, time: 1), seed: 1).parameters == h.parameters)
        #expect(LayerHarness(try Embedding<Double>(vocabulary: 100, features: 50, time: 1), seed: 2).parameters != h.parameters)
    }

    @Test("A tied table's N(0, 0.02²): the same draws scaled; survives conversion; a spread that is not > 0 is refused")
    func smallInitialisation() throws {
        let unit = LayerHarness(try Embedding<Double>(vocabulary: 100, features: 50, time: 1), seed: 1).parameters
        let small = try Embedding<Double>(vocabulary: 100, features: 50, time: 1, standardDeviation: 0.02)
        let drawn = LayerHarness(small, seed: 1).parameters
        #expect(zip(drawn, unit).allSatisfy { abs($0 - 0.02 * $1) <= 1e-15 })
        #expect((small.converted(to: Float.self) as? Embedding<Float>)?.standardDeviation == 0.02)
        #expect(
            message { () throws(NetworkError) in try Embedding<Float>(vocabulary: 3, features: 4, time: 2, standardDeviation: 0) }
                == "Embedding(3→4): its initial standard deviation must be finite and > 0, got 0.0")
    }

    @Test("Describes itself; shapes [time] → [time, features]; one weight in nn.Embedding's layout; sizes checked")
    func shapes() throws {
        let embedding = try Embedding<Float>(vocabulary: 27, features: 64, time: 8)
        #expect("\(embedding)" == "Embedding(27→64)")
        #expect(embedding.inputShape == [8] && embedding.outputShape == [8, 64])
        #expect(embedding.parameterShapes.map(\.name) == ["weight"] && embedding.parameterShapes.map(\.shape) == [[27, 64]])
        #expect(embedding.vocabulary == 27 && (embedding.converted(to: Double.self) as? any TokenInput)?.vocabulary == 27)
        #expect(
            message { () throws(NetworkError) in try Embedding<Float>(vocabulary: 0, features: 4, time: 2) }
                == "Embedding(0→4): vocabulary, features and time must be at least 1, got 0, 4 and 2")
        #expect(throws: NetworkError.self) { try Embedding<Float>(vocabulary: (1 << 24) + 1, features: 1, time: 1) }
    }

    @Test("Tokens out of range are a NetworkError at the door that names the row, position, value and range; nothing crashes")
    func tokensCheckedAtTheDoor() throws {
        var network = try Network<Double>(
            [try Embedding<Double>(vocabulary: 5, features: 3, time: 4), try Dense<Double>(3, 5, activation: .identity, time: 4)],
            loss: .sequenceCrossEntropy)
        network.initialize(seed: 1)
        var x = try Tensor<Double>(rows: [[0, 1, 2, 3], [4, 0, 1, 2]])
        let t = try Tensor<Double>(rows: [[1, 2, 3, 4], [0, 1, 2, -1]])
        _ = try network.lossAndGradients(x, targets: t)
        x[1, 2] = 5
        #expect(
            message { () throws(NetworkError) in try network.forward(x) }
                == "the inputs' row 1, position 2 holds 5.0, but Embedding(5→3) takes token indices: whole numbers in 0..<5")
        for bad in [-1, 2.5, .nan, .infinity] {
            x[1, 2] = bad
            #expect(throws: NetworkError.self) { try network.lossAndGradients(x, targets: t) }
            #expect(throws: NetworkError.self) { try network.loss(x, targets: t) }
        }
        // The flat form of a batch, (batch, time), is its only form: the same check.
        x[1, 2] = 1
        _ = try network.forward(x)
    }

    @Test("Only a network's first layer reads tokens: later, or inside a container, it is refused")
    func onlyFirst() throws {
        let dense = try Dense<Double>(4, 4, activation: .tanh)
        let embedding = try Embedding<Double>(vocabulary: 6, features: 2, time: 4)
        #expect(
            message { () throws(NetworkError) in try Network<Double>([dense, embedding], loss: .halfSquaredError) }
                == "layer 1 Embedding(6→2): it reads token indices: only a network's first layer can, where the network checks them")
        #expect(throws: NetworkError.self) { try Sequential<Double>([embedding]) }
    }
}
