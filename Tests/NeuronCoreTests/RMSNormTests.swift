import Testing

@testable import NeuronCore

@Suite("RMSNorm")
struct RMSNormTests {
    // MARK: By hand, and PyTorch's formula in NumPy

    @Test("By hand: [1, 2, 3, 4] has mean square 7.5, so y = x/√7.5; dy = [1, 0, 0, 0] gives dx = r·(29, -2, -3, -4)/30 (ε aside)")
    func handWorked() throws {
        // mean(x²) = (1 + 4 + 9 + 16)/4 = 7.5, r = 1/√(7.5 + 1e-5) = 0.3651481282381064 (1/√7.5 =
        // 0.36514837… without ε): y = x·r. Backward with weight 1: g = dy = (1, 0, 0, 0),
        // mean(g·x) = 1/4, r² ≈ 1/7.5 = 2/15, so dx = r·(g - x·r²/4) = r·(g - x/30)
        // = r·(29/30, -2/30, -3/30, -4/30). The exact figures from NumPy, ε included; x·dx = 0 as
        // any dx must when ε is 0 (a rescaled row normalizes to the same y), here up to ε's 1e-5.
        var norm = try RMSNorm<Double>(shape: [4])
        let x = try Tensor<Double>(shape: [1, 4], scalars: [1, 2, 3, 4])
        let run = runLayer(&norm, x: x, parameters: [1, 1, 1, 1], dy: try Tensor(shape: [1, 4], scalars: [1, 0, 0, 0]))
        let r = 0.3651481282381064
        expectClose(run.output.scalars, [r, 2 * r, 3 * r, 4 * r], tolerance: 1e-15)
        expectClose(norm.cache.inverseRMS.scalars, [r], tolerance: 1e-16)
        expectClose(
            run.inputGradient.scalars, [0.3529765401922869, -0.02434317609163897, -0.03651476413745845, -0.04868635218327794], tolerance: 1e-15)
        expectClose(run.inputGradient.scalars, [29, -2, -3, -4].map { r * $0 / 30 }, tolerance: 1e-7)  // ε's share
        // dweight = dy ⊙ x̂ = (r, 0, 0, 0).
        expectClose(run.gradients, [r, 0, 0, 0], tolerance: 1e-16)
        #expect(abs(zip(x.scalars, run.inputGradient.scalars).map { $0 * $1 }.reduce(0, +)) < 1e-6)
    }

    @Test("nn.RMSNorm's formula in NumPy: a (3, 4) sequence, a weight, a constant row giving the weight and a zero row 0")
    func numpyReference() throws {
        // PyTorch's documented y = x / √(mean(x²) + ε) · γ, in NumPy 2.4 (float64):
        //     x = np.array([[0.5, -1.0, 2.0, 0.25], [3.0, 3.0, 3.0, 3.0], [0, 0, 0, 0]])
        //     w = np.array([1.5, -0.5, 2.0, 1.0])
        //     x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-5) * w
        // Row 0: mean square 1.328125. Row 1: mean square 9, y = w·3/√(9 + ε), just under w. Row 2
        // is all zero: ε keeps r finite (1/√1e-5), and y = 0.
        let expected: [Double] = [
            0.6507889234316921, 0.43385928228779475, 3.470874258302358, 0.21692964114389737,
            1.499999166667361, -0.4999997222224537, 1.9999988888898148, 0.9999994444449074,
            0, 0, 0, 0,
        ]
        let weight: [Double] = [1.5, -0.5, 2.0, 1.0]
        let scalars: [Double] = [0.5, -1.0, 2.0, 0.25, 3, 3, 3, 3, 0, 0, 0, 0]
        var norm = try RMSNorm<Double>(shape: [3, 4])
        let run = runLayer(&norm, x: try Tensor(shape: [1, 3, 4], scalars: scalars), parameters: weight, dy: nil)
        expectClose(run.output.scalars, expected, tolerance: 1e-15)
        expectClose(norm.cache.inverseRMS.scalars[2], 1 / 1e-5.squareRoot(), tolerance: 1e-12)
        var float = try RMSNorm<Float>(shape: [3, 4])
        let floatRun = runLayer(
            &float, x: try Tensor(shape: [1, 3, 4], scalars: scalars.map { Float($0) }), parameters: weight.map { Float($0) }, dy: nil)
        expectClose(floatRun.output.scalars, expected.map { Float($0) }, tolerance: 1e-6)
    }

    // MARK: Fast against naive

    /// Random shapes with odd sizes (`[features]` or `[time, features]`, a single feature and more
    /// than eight, past the kernel's eight partial sums), weight, input and output gradient; the
    /// kernels' passes against the naive loops.
    func fastEqualsNaive<Scalar: TensorScalar>(_: Scalar.Type, tolerance: Scalar) throws {
        for seed in UInt64(1)...30 {
            var g = SeededGenerator(seed: seed)
            let f = [1, 3, 5, 7, 13, 20][g.index(below: 6)]
            let shape = g.index(below: 2) == 0 ? [f] : [[1, 3, 5][g.index(below: 3)], f]
            let batch = 1 + g.index(below: 4), count = batch * shape.reduce(1, *)
            let epsilon = [1e-5, 1e-3, 0.1][g.index(below: 3)]
            var norm = try RMSNorm<Scalar>(shape: shape, epsilon: epsilon)
            let x = try Tensor<Scalar>(shape: [batch] + shape, scalars: randomScalars(count, using: &g))
            let dy = try Tensor<Scalar>(shape: x.shape, scalars: randomScalars(count, using: &g))
            let parameters: [Scalar] = randomScalars(f, using: &g)
            let run = runLayer(&norm, x: x, parameters: parameters, dy: dy)
            let rows = try x.reshaped(to: [count / f, f]), weight = Tensor(vector: parameters)
            let y = Naive.rmsNormForward(rows, weight: weight, epsilon: epsilon)
            let naive = Naive.rmsNormBackward(rows, outputGradient: try dy.reshaped(to: [count / f, f]), weight: weight, epsilon: epsilon)
            // r = 1/√(mean(x²) + ε) magnifies rounding in dx when a row is small (a single
            // feature near 0 with ε = 1e-5), so the bounds scale with the largest entry compared.
            func bound(_ expected: [Scalar]) -> Scalar { tolerance * Swift.max(1, expected.map { abs($0) }.max() ?? 0) }
            expectClose(run.output.scalars, y.scalars, tolerance: bound(y.scalars))
            expectClose(run.gradients, naive.weight.scalars, tolerance: bound(naive.weight.scalars))
            expectClose(run.inputGradient.scalars, naive.input.scalars, tolerance: bound(naive.input.scalars))
        }
    }

    @Test("Equals the naive row mean square and full-Jacobian backward, Double")
    func fastEqualsNaiveDouble() throws {
        // The naive loops run in Double too, summing in another order: a few ulps of the largest
        // entry.
        try fastEqualsNaive(Double.self, tolerance: 1e-14)
    }

    @Test("Equals the naive row mean square and full-Jacobian backward, Float")
    func fastEqualsNaiveFloat() throws {
        // The naive loops run in Double and round once; the kernel rounds at every step in Float
        // (a sum of up to 20 squares, a square root, dx's two terms): a few ulps of the largest
        // entry, ulp 6e-8 at 1.
        try fastEqualsNaive(Float.self, tolerance: 2e-6)
    }

    @Test("Training and evaluation compute the same; each sample alone gives its rows of the batch's output")
    func modeIndependent() throws {
        var g = SeededGenerator(seed: 4)
        var norm = try RMSNorm<Double>(shape: [3, 5])
        let x = Tensor<Double>.random([2, 3, 5], using: &g)
        let parameters: [Double] = randomScalars(5, using: &g)
        let training = runLayer(&norm, x: x, parameters: parameters, dy: nil).output
        #expect(runLayer(&norm, x: x, parameters: parameters, dy: nil, mode: .evaluation).output == training)
        let first = try Tensor<Double>(shape: [1, 3, 5], scalars: Array(x.scalars[..<15]))
        #expect(runLayer(&norm, x: first, parameters: parameters, dy: nil).output.scalars == Array(training.scalars[..<15]))
        #expect(norm.stateShapes.isEmpty)
    }

    @Test("Backward adds into the weight gradient and leaves dx alone when not asked")
    func accumulates() throws {
        var g = SeededGenerator(seed: 9)
        var h = LayerHarness(try RMSNorm<Double>(shape: [4, 3]), seed: 2)
        h.parameters = randomScalars(3, using: &g)
        let x = Tensor<Double>.random([2, 4, 3], using: &g), dy = Tensor<Double>.random([2, 4, 3], using: &g)
        _ = h.forward(x)
        h.backward(x, dy, inputGradient: true)
        let once = h.gradients, dx = h.layer.inputGradient
        h.backward(x, dy, inputGradient: false)
        expectClose(h.gradients, once.map { 2 * $0 }, tolerance: 1e-15)
        #expect(h.layer.inputGradient == dx)
    }

    @Test("Caches are sized on the first batch and reused after: no buffer is reallocated")
    func cachesReused() throws {
        var g = SeededGenerator(seed: 1)
        var h = LayerHarness(try RMSNorm<Float>(shape: [5, 3]), seed: 3)
        let x = Tensor<Float>.random([4, 5, 3], using: &g), dy = Tensor<Float>.random([4, 5, 3], using: &g)
        func addresses() -> [UnsafeRawPointer?] {
            let cache = h.layer.cache
            return [cache.output, cache.inverseRMS, cache.inputGradient].map { tensor in
                tensor.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) }
            }
        }
        _ = h.forward(x)
        h.backward(x, dy, inputGradient: true)
        let first = addresses()
        for _ in 0..<3 {
            _ = h.forward(x)
            h.backward(x, dy, inputGradient: true)
        }
        #expect(addresses() == first)
    }

    // MARK: Declarations

    @Test("nn.RMSNorm's parameter: weight, ones, (features); PyTorch's order, not decayed; r cached per row")
    func declarations() throws {
        let norm = try RMSNorm<Float>(shape: [8, 64])
        #expect(norm.parameterShapes.map(\.name) == ["weight"] && norm.parameterShapes.map(\.shape) == [[64]])
        #expect(norm.pytorchOrder(of: "weight") == nil && !norm.isDecayed("weight"))
        #expect(norm.inputShape == [8, 64] && norm.outputShape == [8, 64] && norm.features == 64 && norm.epsilon == 1e-5)
        let vector = try RMSNorm<Float>(shape: [5])
        #expect("\(norm)" == "RMSNorm(8×64)" && "\(vector)" == "RMSNorm(5)")
        // One r a row: 8 per sequence, 1 per vector; y and dx are counted apart.
        #expect(norm.cacheCount == 8 && vector.cacheCount == 1)
        #expect(norm.footprintCount == 2 * 8 * 64 + 8)
        let h = LayerHarness(try RMSNorm<Double>(shape: [3]), seed: 1)
        #expect(h.parameters == [1, 1, 1])
        let converted = norm.converted(to: Double.self)
        #expect("\(converted)" == "RMSNorm(8×64)" && (converted as? RMSNorm<Double>)?.epsilon == 1e-5)
    }

    @Test("Bad shapes and epsilons are refused with the layer named")
    func refused() {
        #expect(
            message { () throws(NetworkError) in try RMSNorm<Float>(shape: [2, 3, 4]) }.contains(
                "RMSNorm(2×3×4): takes (features) vectors or (time, features) sequences"))
        #expect(message { () throws(NetworkError) in try RMSNorm<Float>(shape: []) }.contains("takes (features) vectors"))
        #expect(message { () throws(NetworkError) in try RMSNorm<Float>(shape: [0]) }.contains("takes (features) vectors"))
        #expect(message { () throws(NetworkError) in try RMSNorm<Float>(shape: [4, -1]) }.contains("takes (features) vectors"))
        #expect(message { () throws(NetworkError) in try RMSNorm<Float>(shape: [4], epsilon: 0) }.contains("epsilon must be above 0, got 0.0"))
        #expect(message { () throws(NetworkError) in try RMSNorm<Float>(shape: [4], epsilon: -1e-5) }.contains("epsilon must be above 0"))
        #expect(message { () throws(NetworkError) in try RMSNorm<Float>(shape: [4], epsilon: .infinity) }.contains("epsilon must be above 0"))
    }

    // MARK: Gradient checks by finite differences

    /// The network of `layers`, initialized from `seed`, every RMSNorm's weight in [0.5, 1.5) (away
    /// from the ones it starts at, so that its gradient is checked in general position), with a
    /// batch of 3 continuous inputs and matching targets.
    static func checkedCase(_ layers: [any Layer<Double>], seed: UInt64) throws -> (Network<Double>, Tensor<Double>, Tensor<Double>) {
        var network = try Network<Double>(layers, loss: .halfSquaredError)
        network.initialize(seed: seed)
        var g = SeededGenerator(seed: seed)
        for tensor in network.parameterTensors where network.layers[tensor.layer] is RMSNorm<Double> {
            for i in tensor.range { network.parameters[i] = g.uniform(0.5, 1.5) }
        }
        let x = Tensor<Double>.random([3] + network.inputShape, using: &g)
        return (network, x, randomTargets(batch: 3, outputs: network.outputCount, loss: .halfSquaredError, using: &g))
    }

    @Test("[Dense → RMSNorm → GELU → Dense] over features passes the gradient check, every parameter and input")
    func featureNetworkPasses() throws {
        for seed in UInt64(1)...5 {
            let layers: [any Layer<Double>] = [
                try Dense<Double>(4, 6, activation: .identity), try RMSNorm<Double>(shape: [6]),
                try GELU<Double>(shape: [6]), try Dense<Double>(6, 3, activation: .tanh),
            ]
            let (network, x, t) = try Self.checkedCase(layers, seed: seed)
            let report = try GradientCheck(checkInputs: true).run(on: network, inputs: x, targets: t)
            #expect(report.passed, "seed \(seed), \(network): \(report)")
            #expect(report.tensors.map(\.checked).reduce(0, +) == network.parameterCount + x.count)
        }
    }

    @Test("Over continuous sequences, RMSNorm first and after a per-position dense layer: every parameter and input")
    func continuousSequencesPass() throws {
        let cases: [[any Layer<Double>]] = [
            [
                try RMSNorm<Double>(shape: [4, 3]), try GELU<Double>(shape: [4, 3]),
                try Dense<Double>(3, 2, activation: .identity, time: 4),
            ],
            [
                try Dense<Double>(3, 5, activation: .tanh, time: 4), try RMSNorm<Double>(shape: [4, 5], epsilon: 1e-3),
                try GELU<Double>(shape: [4, 5], approximation: .tanh), try Dense<Double>(5, 2, activation: .identity, time: 4),
            ],
        ]
        for (i, layers) in cases.enumerated() {
            let (network, x, t) = try Self.checkedCase(layers, seed: 20 + UInt64(i))
            let report = try GradientCheck(checkInputs: true).run(on: network, inputs: x, targets: t)
            #expect(report.passed, "\(network): \(report)")
            #expect(report.tensors.map(\.checked).reduce(0, +) == network.parameterCount + x.count)
        }
    }
}
