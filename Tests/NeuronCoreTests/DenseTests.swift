import Testing
@testable import NeuronCore

/// Runs a lone layer on its own parameter buffer.
struct LayerHarness<L: Layer> {
    var layer: L
    var parameters: [L.Scalar]
    var gradients: [L.Scalar]

    init(_ layer: L, seed: UInt64) {
        self.layer = layer
        parameters = Array(repeating: 0, count: layer.parameterCount)
        gradients = parameters
        var generator = SeededGenerator(seed: seed)
        let l = layer
        parameters.withUnsafeMutableBufferPointer { l.initialize($0, using: &generator) }
    }

    mutating func forward(_ x: Tensor<L.Scalar>) -> Tensor<L.Scalar> {
        let p = parameters
        p.withUnsafeBufferPointer { layer.forward(x, parameters: $0) }
        return layer.output
    }

    mutating func backward(_ x: Tensor<L.Scalar>, _ dy: Tensor<L.Scalar>, inputGradient: Bool) {
        let p = parameters
        var g = gradients
        p.withUnsafeBufferPointer { pp in
            g.withUnsafeMutableBufferPointer { pg in
                layer.backward(input: x, outputGradient: dy, parameters: pp, gradients: pg, computeInputGradient: inputGradient)
            }
        }
        gradients = g
    }
}

@Suite("Dense layer: forward and backward against the naive loops")
struct DenseTests {
    @Test("Weights 0..<6 worked by hand")
    func handWorked() throws {
        // x: (1, 3) = [[1, 2, 3]]  w: (3, 2) = [[0, 1], [2, 3], [4, 5]]  b = [1, -1]
        // x·w = [[16, 22]], + b = [[17, 21]]
        var h = LayerHarness(try Dense<Double>(3, 2, activation: .identity), seed: 0)
        h.parameters = [0, 1, 2, 3, 4, 5, 1, -1]
        let x = try Tensor<Double>(rows: [[1, 2, 3]])
        #expect(h.forward(x).rowArrays == [[17, 21]])
        // dy = [[1, 2]]: dw = xᵀ·dy = [[1, 2], [2, 4], [3, 6]], db = [1, 2], dx = dy·wᵀ = [[2, 8, 14]]
        h.backward(x, try Tensor(rows: [[1, 2]]), inputGradient: true)
        #expect(h.gradients == [1, 2, 2, 4, 3, 6, 1, 2])
        #expect(h.layer.inputGradient.rowArrays == [[2, 8, 14]])
        // Backward adds into the gradient buffer: a second pass doubles it.
        h.backward(x, try Tensor(rows: [[1, 2]]), inputGradient: false)
        #expect(h.gradients == [2, 4, 4, 8, 6, 12, 2, 4])
    }

    @Test("Fast and naive agree for every activation", arguments: Activation.allCases)
    func matchesNaive(activation: Activation) throws {
        func check<Scalar: TensorScalar>(_: Scalar.Type) throws {
            var generator = SeededGenerator(seed: 9)
            for (batch, inputs, outputs) in [(1, 1, 1), (3, 5, 2), (17, 9, 33), (64, 31, 10)] {
                var h = LayerHarness(try Dense<Scalar>(inputs, outputs, activation: activation), seed: 4)
                // A non-zero bias so that its path is exercised.
                for j in 0..<outputs { h.parameters[inputs * outputs + j] = Scalar(generator.uniform(-0.5, 0.5)) }
                let x = Tensor<Scalar>.random([batch, inputs], using: &generator)
                let dy = Tensor<Scalar>.random([batch, outputs], using: &generator)
                let w = try Tensor(shape: [inputs, outputs], scalars: Array(h.parameters[0 ..< inputs * outputs]))
                let b = Tensor(vector: Array(h.parameters[(inputs * outputs)...]))
                let tolerance = 4 * summationTolerance(Scalar.self, terms: max(inputs, batch, outputs))
                let y = h.forward(x)
                expectClose(y.scalars, Naive.denseForward(x, weight: w, bias: b, activation: activation).scalars, tolerance: tolerance)
                h.backward(x, dy, inputGradient: true)
                let naive = Naive.denseBackward(x, weight: w, output: y, outputGradient: dy, activation: activation)
                expectClose(Array(h.gradients[0 ..< inputs * outputs]), naive.weight.scalars, tolerance: tolerance)
                expectClose(Array(h.gradients[(inputs * outputs)...]), naive.bias.scalars, tolerance: tolerance)
                expectClose(h.layer.inputGradient.scalars, naive.input.scalars, tolerance: tolerance)
            }
        }
        try check(Float.self)
        try check(Double.self)
    }

    @Test("Activations and their derivatives from the saved output, by hand")
    func activationsByHand() throws {
        var y = try Tensor<Double>(rows: [[0, -2, 3]])
        Activation.relu.apply(to: &y)
        #expect(y.scalars == [0, 0, 3])
        var s = try Tensor<Double>(rows: [[0, 1000, -1000]])
        Activation.sigmoid.apply(to: &s)
        #expect(s.scalars == [0.5, 1, 0])  // no overflow at ±1000
        var dz = Tensor<Double>(zeros: [1, 3])
        Activation.sigmoid.backward(output: s, gradient: try Tensor(rows: [[1, 1, 1]]), into: &dz)
        #expect(dz.scalars == [0.25, 0, 0])
        var p = try Tensor<Double>(rows: [[1, 1], [0, 1000]])
        Activation.softmax.apply(to: &p)
        #expect(p.rowArrays == [[0.5, 0.5], [0, 1]])  // shifted by the row maximum: e^1000 never formed
        var nan = Tensor<Double>(vector: [.nan, -1])
        Activation.relu.apply(to: &nan)
        #expect(nan[0].isNaN && nan[1] == 0)  // relu keeps a NaN visible
    }

    @Test("Glorot for tanh, He for relu, zero biases, the same seed the same weights")
    func initialisation() throws {
        let tanh = LayerHarness(try Dense<Double>(30, 20, activation: .tanh), seed: 1)
        let glorot = (6.0 / 50).squareRoot()
        #expect(tanh.parameters[0 ..< 600].allSatisfy { abs($0) <= glorot })
        #expect(tanh.parameters[0 ..< 600].contains { abs($0) > 0.9 * glorot })  // spread over the whole range
        #expect(tanh.parameters[600...].allSatisfy { $0 == 0 })
        let relu = LayerHarness(try Dense<Double>(30, 20, activation: .relu), seed: 1)
        let he = (6.0 / 30).squareRoot()
        #expect(relu.parameters[0 ..< 600].allSatisfy { abs($0) <= he } && relu.parameters[0 ..< 600].contains { abs($0) > glorot })
        #expect(LayerHarness(try Dense<Double>(30, 20), seed: 1).parameters == tanh.parameters)
        #expect(LayerHarness(try Dense<Double>(30, 20), seed: 2).parameters != tanh.parameters)
    }

    @Test("Sizes below 1 are refused")
    func badSizes() {
        #expect(throws: NetworkError.self) { try Dense<Float>(0, 3) }
        #expect("\(try! Dense<Float>(784, 256))" == "Dense(784→256, tanh)")
    }
}
