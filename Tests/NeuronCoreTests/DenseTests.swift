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
        var state = [L.Scalar](repeating: 0, count: layer.stateCount)
        parameters.withUnsafeMutableBufferPointer { p in
            state.withUnsafeMutableBufferPointer { l.initialize(parameters: p, state: $0, using: &generator) }
        }
    }

    mutating func forward(_ x: Tensor<L.Scalar>) -> Tensor<L.Scalar> {
        let p = parameters
        var state = [L.Scalar](repeating: 0, count: layer.stateCount)
        p.withUnsafeBufferPointer { p in
            state.withUnsafeMutableBufferPointer { layer.forward(x, parameters: p, state: $0, mode: .training) }
        }
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
                let w = try Tensor(shape: [inputs, outputs], scalars: Array(h.parameters[0..<inputs * outputs]))
                let b = Tensor(vector: Array(h.parameters[(inputs * outputs)...]))
                let tolerance = 4 * summationTolerance(Scalar.self, terms: max(inputs, batch, outputs))
                let y = h.forward(x)
                let reference = Naive.denseForward(x, weight: w, bias: b, activation: activation)
                // Float's tanh is an approximation within 4e-7 of the C library's, the naive loops'.
                let activationTolerance: Scalar = activation == .tanh && Scalar.self == Float.self ? 2e-6 : 0
                expectClose(y.scalars, reference.output.scalars, tolerance: tolerance + activationTolerance)
                h.backward(x, dy, inputGradient: true)
                let naive = Naive.denseBackward(x, weight: w, preActivation: reference.preActivation, outputGradient: dy, activation: activation)
                let gradientTolerance = tolerance + activationTolerance * Scalar(batch * inputs)
                expectClose(Array(h.gradients[0..<inputs * outputs]), naive.weight.scalars, tolerance: gradientTolerance)
                expectClose(Array(h.gradients[(inputs * outputs)...]), naive.bias.scalars, tolerance: gradientTolerance)
                expectClose(h.layer.inputGradient.scalars, naive.input.scalars, tolerance: gradientTolerance)
            }
        }
        try check(Float.self)
        try check(Double.self)
    }

    @Test("Glorot for tanh, He for relu, zero biases, the same seed the same weights")
    func initialisation() throws {
        let tanh = LayerHarness(try Dense<Double>(30, 20, activation: .tanh), seed: 1)
        let glorot = (6.0 / 50).squareRoot()
        #expect(tanh.parameters[0..<600].allSatisfy { abs($0) <= glorot })
        #expect(tanh.parameters[0..<600].contains { abs($0) > 0.9 * glorot })  // spread over the whole range
        #expect(tanh.parameters[600...].allSatisfy { $0 == 0 })
        let relu = LayerHarness(try Dense<Double>(30, 20, activation: .relu), seed: 1)
        let he = (6.0 / 30).squareRoot()
        #expect(relu.parameters[0..<600].allSatisfy { abs($0) <= he } && relu.parameters[0..<600].contains { abs($0) > glorot })
        #expect(LayerHarness(try Dense<Double>(30, 20), seed: 1).parameters == tanh.parameters)
        #expect(LayerHarness(try Dense<Double>(30, 20), seed: 2).parameters != tanh.parameters)
    }

    @Test("Per position, weights 0..<6 worked by hand: each position a row, the gradients summed over positions")
    func perPositionHandWorked() throws {
        // x: (1, 2, 3) = [[[1, 2, 3], [0, 1, 0]]]  w: (3, 2) = [[0, 1], [2, 3], [4, 5]]  b = [1, -1]
        // position 0: [16, 22] + b = [17, 21]; position 1: x·w = w's row 1 = [2, 3], + b = [3, 2]
        var h = LayerHarness(try Dense<Double>(3, 2, activation: .identity, time: 2), seed: 0)
        h.parameters = [0, 1, 2, 3, 4, 5, 1, -1]
        let x = try Tensor<Double>(shape: [1, 2, 3], scalars: [1, 2, 3, 0, 1, 0])
        let y = h.forward(x)
        #expect(y.shape == [1, 2, 2] && y.scalars == [17, 21, 3, 2])
        // dy = [[[1, 2], [1, 0]]]: dw = x₀ᵀ·dy₀ + x₁ᵀ·dy₁ = [[1, 2], [2, 4], [3, 6]] + [[0, 0], [1, 0], [0, 0]],
        // db = [1, 2] + [1, 0], dx₀ = dy₀·wᵀ = [2, 8, 14], dx₁ = dy₁·wᵀ = w's column 0 = [0, 2, 4]
        h.backward(x, try Tensor(shape: [1, 2, 2], scalars: [1, 2, 1, 0]), inputGradient: true)
        #expect(h.gradients == [1, 2, 3, 4, 3, 6, 2, 2])
        #expect(h.layer.inputGradient.shape == [1, 2, 3] && h.layer.inputGradient.scalars == [2, 8, 14, 0, 2, 4])
    }

    @Test("Per position, fast and naive agree: the naive layer on (batch·time, inputs), shaped back", arguments: [Activation.tanh, .relu, .identity])
    func perPositionMatchesNaive(activation: Activation) throws {
        func check<Scalar: TensorScalar>(_: Scalar.Type) throws {
            var generator = SeededGenerator(seed: 11)
            for (batch, time, inputs, outputs) in [(1, 1, 1, 1), (2, 3, 4, 5), (5, 7, 9, 6)] {
                var h = LayerHarness(try Dense<Scalar>(inputs, outputs, activation: activation, time: time), seed: 4)
                for j in 0..<outputs { h.parameters[inputs * outputs + j] = Scalar(generator.uniform(-0.5, 0.5)) }
                let x = Tensor<Scalar>.random([batch, time, inputs], using: &generator)
                let dy = Tensor<Scalar>.random([batch, time, outputs], using: &generator)
                let w = try Tensor(shape: [inputs, outputs], scalars: Array(h.parameters[0..<inputs * outputs]))
                let b = Tensor(vector: Array(h.parameters[(inputs * outputs)...]))
                let rows = try x.reshaped(to: [batch * time, inputs])
                let tolerance = 4 * summationTolerance(Scalar.self, terms: max(inputs, batch * time, outputs))
                let activationTolerance: Scalar = activation == .tanh && Scalar.self == Float.self ? 2e-6 : 0
                let y = h.forward(x)
                let reference = Naive.denseForward(rows, weight: w, bias: b, activation: activation)
                #expect(y.shape == [batch, time, outputs])
                expectClose(y.scalars, reference.output.scalars, tolerance: tolerance + activationTolerance)
                h.backward(x, dy, inputGradient: true)
                let naive = Naive.denseBackward(
                    rows, weight: w, preActivation: reference.preActivation, outputGradient: try dy.reshaped(to: [batch * time, outputs]),
                    activation: activation)
                let gradientTolerance = tolerance + activationTolerance * Scalar(batch * time * inputs)
                expectClose(Array(h.gradients[0..<inputs * outputs]), naive.weight.scalars, tolerance: gradientTolerance)
                expectClose(Array(h.gradients[(inputs * outputs)...]), naive.bias.scalars, tolerance: gradientTolerance)
                #expect(h.layer.inputGradient.shape == [batch, time, inputs])
                expectClose(h.layer.inputGradient.scalars, naive.input.scalars, tolerance: gradientTolerance)
            }
        }
        try check(Float.self)
        try check(Double.self)
    }

    @Test("Per position: shapes [time, features], the same parameter tensors, and no softmax")
    func perPositionShapes() throws {
        let dense = try Dense<Float>(64, 27, activation: .identity, time: 8)
        #expect(dense.inputShape == [8, 64] && dense.outputShape == [8, 27])
        #expect("\(dense)" == "Dense(64→27, identity, per position)")
        #expect(dense.parameterShapes.map(\.name) == ["weight", "bias"] && dense.parameterShapes.map(\.shape) == [[64, 27], [27]])
        #expect("\(dense.converted(to: Double.self))" == "\(dense)" && dense.converted(to: Double.self).inputShape == [8, 64])
        #expect(
            message { () throws(NetworkError) in try Dense<Float>(4, 3, activation: .softmax, time: 2) }
                == "Dense(4→3, per position): a softmax per position belongs to the sequenceCrossEntropy loss: give this layer the identity activation"
        )
        #expect(throws: NetworkError.self) { try Dense<Float>(4, 3, time: 0) }
        // The same initial weights as the layer over vectors: the time is not drawn from.
        #expect(LayerHarness(try Dense<Double>(5, 4, time: 3), seed: 2).parameters == LayerHarness(try Dense<Double>(5, 4), seed: 2).parameters)
    }

    @Test("Sizes below 1 are refused")
    func badSizes() throws {
        #expect(throws: NetworkError.self) { try Dense<Float>(0, 3) }
        #expect("\(try! Dense<Float>(784, 256))" == "Dense(784→256, tanh)")
        let dense = try Dense<Float>(784, 256)
        #expect(dense.inputShape == [784] && dense.outputShape == [256])
    }
}
