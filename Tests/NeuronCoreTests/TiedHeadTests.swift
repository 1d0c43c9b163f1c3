import Testing

@testable import NeuronCore

@Suite("TiedHead: scores from the token embedding's own table, against the naive loops and finite differences")
struct TiedHeadTests {
    @Test("Three tokens, two features, worked by hand; backward adds into the gradient it is handed")
    func handWorked() throws {
        // E: (3, 2) = [[1, 0], [0, 1], [1, 1]]  x: (1, 2, 2) = [[1, 2], [3, -1]]
        // y = x·Eᵀ = [[1, 2, 3], [3, -1, 2]]
        var h = LayerHarness(try TiedHead<Double>(time: 2, features: 2, vocabulary: 3), seed: 0)
        h.parameters = [1, 0, 0, 1, 1, 1]
        h.gradients = [1, 1, 1, 1, 1, 1]  // the embedding's share, already there
        let x = try Tensor<Double>(shape: [1, 2, 2], scalars: [1, 2, 3, -1])
        let y = h.forward(x)
        #expect(y.shape == [1, 2, 3] && y.scalars == [1, 2, 3, 3, -1, 2])
        // dy = [[1, 0, 0], [0, 0, 1]]: dE row 0 += x[0] = [1, 2], row 2 += x[1] = [3, -1]; dx = [E[0], E[2]]
        let dy = try Tensor<Double>(shape: [1, 2, 3], scalars: [1, 0, 0, 0, 0, 1])
        h.backward(x, dy, inputGradient: true)
        #expect(h.gradients == [2, 3, 1, 1, 4, 0])
        #expect(h.layer.inputGradient.shape == [1, 2, 2] && h.layer.inputGradient.scalars == [1, 0, 1, 1])
    }

    @Test("Fast and naive agree in Float and Double")
    func matchesNaive() throws {
        func check<Scalar: TensorScalar>(_: Scalar.Type) throws {
            var generator = SeededGenerator(seed: 5)
            for (batch, time, features, vocabulary) in [(1, 1, 1, 1), (3, 4, 5, 7), (8, 16, 64, 27)] {
                var h = LayerHarness(try TiedHead<Scalar>(time: time, features: features, vocabulary: vocabulary), seed: 0)
                let table = Tensor<Scalar>.random([vocabulary, features], using: &generator)
                h.parameters = table.scalars
                h.gradients = Array(repeating: 0, count: table.count)
                let x = Tensor<Scalar>.random([batch, time, features], using: &generator)
                let dy = Tensor<Scalar>.random([batch, time, vocabulary], using: &generator)
                let y = h.forward(x)
                expectClose(y.scalars, Naive.tiedHeadForward(x, table: table).scalars, tolerance: summationTolerance(Scalar.self, terms: features))
                h.backward(x, dy, inputGradient: true)
                let naive = Naive.tiedHeadBackward(x, table: table, outputGradient: dy)
                expectClose(h.gradients, naive.table.scalars, tolerance: summationTolerance(Scalar.self, terms: batch * time))
                expectClose(h.layer.inputGradient.scalars, naive.input.scalars, tolerance: summationTolerance(Scalar.self, terms: vocabulary))
            }
        }
        try check(Float.self)
        try check(Double.self)
    }

    /// `Embedding(5→3) → LayerNorm → TiedHead(3→5)` over 4 positions, the table stored once.
    static func tiedNetwork() throws -> Network<Double> {
        var network = try Network<Double>(
            [
                try Embedding<Double>(vocabulary: 5, features: 3, time: 4), try LayerNorm<Double>(shape: [4, 3]),
                try TiedHead<Double>(time: 4, features: 3, vocabulary: 5),
            ], loss: .sequenceCrossEntropy)
        network.initialize(seed: 3)
        return network
    }

    @Test("A network stores the shared table once and hands the head the embedding's slice")
    func sharedSlice() throws {
        var network = try Self.tiedNetwork()
        // The embedding's 15 entries and LayerNorm's 3 + 3: the head adds none.
        #expect(network.parameterCount == 5 * 3 + 6)
        #expect(network.parameterTensors.map(\.name) == ["layers.0.weight", "layers.1.weight", "layers.1.bias"])
        #expect(network.layerRanges[2] == network.layerRanges[0])
        // The head's scores are the table times LayerNorm's output: y[t] = E·h[t], read from the same buffer.
        let x = try Tensor<Double>(rows: [[0, 1, 4, 4]])
        try network.forward(x)
        let h = network.layers[1].output
        let table = network.parameter(network.parameterTensors[0])
        expectClose(network.layers[2].output.scalars, Naive.tiedHeadForward(h, table: table).scalars, tolerance: 1e-14)
    }

    @Test("The shared table's gradient is the embedding's scatter plus the head's product: finite differences agree, in Double and via Float")
    func gradientCheck() throws {
        let network = try Self.tiedNetwork()
        // Token 4 twice and a padded target: the scatter adds two positions into one row, the head all five rows.
        let x = try Tensor<Double>(rows: [[0, 1, 4, 4], [2, 3, 4, 0]])
        let t = try Tensor<Double>(rows: [[1, 4, 4, -1], [3, 0, 2, 2]])
        let report = try GradientCheck().run(on: network, inputs: x, targets: t)
        #expect(report.passed, "\(report)")
        #expect(report.tensors.map(\.checked).reduce(0, +) == network.parameterCount)
        // The same network in Float keeps the sharing (checked on its Double copy).
        let float = network.converted(to: Float.self)
        #expect(float.layerRanges[2] == float.layerRanges[0])
        #expect(try GradientCheck().run(on: float, inputs: x.converted(to: Float.self), targets: t.converted(to: Float.self)).passed)
    }

    @Test("A head that does not fit its embedding, or names a later layer, is refused naming both")
    func mismatches() throws {
        let embedding = try Embedding<Double>(vocabulary: 5, features: 3, time: 4)
        let wrong = message { () throws(NetworkError) in
            try Network<Double>([embedding, try TiedHead<Double>(time: 4, features: 3, vocabulary: 6)], loss: .sequenceCrossEntropy)
        }
        #expect(wrong == "layer 1 TiedHead(3→6, tied to layer 0): it uses layer 0's weight (6, 3), but layer 0 Embedding(5→3) holds weight (5, 3)")
        let later = message { () throws(NetworkError) in
            try Network<Double>([embedding, try TiedHead<Double>(time: 4, features: 3, vocabulary: 5, embedding: 1)], loss: .sequenceCrossEntropy)
        }
        #expect(later == "layer 1 TiedHead(3→5, tied to layer 1): it uses layer 1's parameters, but only an earlier layer's can be shared")
        #expect(throws: NetworkError.self) { try TiedHead<Float>(time: 4, features: 0, vocabulary: 5) }
    }
}
