import Testing

@testable import NeuronCore

/// A realistic mistake in ``LayerNorm``'s input gradient, planted by ``PlantedLayerNorm``.
enum LayerNormBug: String, Sendable, CaseIterable {
    /// `dx = s·(g - x̂·mean(g ⊙ x̂))`: the path through the mean dropped (the `-1/n` of the Jacobian).
    case meanPathDropped
    /// `dx = s·(g - mean(g))`: the variance treated as a constant (the `-x̂ᵢ·x̂ₖ/n` of the Jacobian).
    case varianceGradientMissing
}

/// A layer normalization whose backward hands back a wrong input gradient: forward and the
/// parameter gradients are the real layer's.
struct PlantedLayerNorm<Scalar: TensorScalar>: Layer {
    var norm: LayerNorm<Scalar>
    let bug: LayerNormBug
    var damaged = Tensor<Scalar>(zeros: [0, 0])

    var inputShape: [Int] { norm.inputShape }
    var outputShape: [Int] { norm.outputShape }
    var parameterShapes: [(name: String, shape: [Int])] { norm.parameterShapes }
    var description: String { "Planted(\(bug), \(norm))" }
    var output: Tensor<Scalar> { norm.output }
    var inputGradient: Tensor<Scalar> { damaged }

    func initialize(parameters: UnsafeMutableBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>, using generator: inout SeededGenerator)
    {
        norm.initialize(parameters: parameters, state: state, using: &generator)
    }
    mutating func forward(_ x: Tensor<Scalar>, parameters: UnsafeBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>, mode: LayerMode) {
        norm.forward(x, parameters: parameters, state: state, mode: mode)
    }
    func converted<Other: TensorScalar>(to: Other.Type) -> any Layer<Other> {
        PlantedLayerNorm<Other>(norm: norm.converted(to: Other.self) as! LayerNorm<Other>, bug: bug)
    }

    mutating func backward(
        input x: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>,
        parameters: UnsafeBufferPointer<Scalar>, gradients: UnsafeMutableBufferPointer<Scalar>, computeInputGradient: Bool
    ) {
        norm.backward(input: x, outputGradient: dy, parameters: parameters, gradients: gradients, computeInputGradient: computeInputGradient)
        let f = norm.features, n = Scalar(f)
        damaged = Tensor(zeros: x.shape)
        for r in 0..<x.count / f {
            let (m, s) = (norm.cache.mean[r], norm.cache.inverseDeviation[r])
            var (meanG, meanGX) = (Scalar(0), Scalar(0))
            for j in 0..<f {
                let g = dy[r * f + j] * parameters[j]
                meanG += g / n
                meanGX += g * (x[r * f + j] - m) * s / n
            }
            for j in 0..<f {
                let (g, xHat) = (dy[r * f + j] * parameters[j], (x[r * f + j] - m) * s)
                damaged[r * f + j] = s * (bug == .meanPathDropped ? g - xHat * meanGX : g - meanG)
            }
        }
    }
}

@Suite("LayerNorm")
struct LayerNormTests {
    // MARK: By hand, and PyTorch's formula in NumPy

    @Test("By hand: [1, 2, 3] normalizes to ±1.2247 and 0; dy = [1, 0, 0] gives dx = s·(1/6, -1/3, 1/6) (ε aside)")
    func handWorked() throws {
        // mean 2, biased variance (1 + 0 + 1)/3 = 2/3, s = 1/√(2/3 + 1e-5) = 1.2247356859083902:
        // y = (-s, 0, s). Backward with weight 1: g = dy = (1, 0, 0), mean(g) = 1/3, x̂ = (-s, 0, s),
        // mean(g·x̂) = -s/3, so dx = s·(1 - 1/3 - s²/3, -1/3, -1/3 + s²/3), and s² = 1.49998 ≈ 3/2
        // makes it s·(1/6, -1/3, 1/6) = (0.2041, -0.4082, 0.2041); it sums to 0, as any dx must
        // (a shift of the whole row changes nothing). The exact figures from NumPy, ε included.
        var norm = try LayerNorm<Double>(shape: [3])
        let x = try Tensor<Double>(shape: [1, 3], scalars: [1, 2, 3])
        let run = runLayer(&norm, x: x, parameters: [1, 1, 1, 0, 0, 0], dy: try Tensor(shape: [1, 3], scalars: [1, 0, 0]))
        expectClose(run.output.scalars, [-1.2247356859083902, 0, 1.2247356859083902], tolerance: 1e-15)
        expectClose(run.inputGradient.scalars, [0.2041317996979287, -0.40824522863613005, 0.2041134289382015], tolerance: 1e-15)
        // dweight = dy ⊙ x̂ = (-s, 0, 0), dbias = dy.
        expectClose(run.gradients, [-1.2247356859083902, 0, 0, 1, 0, 0], tolerance: 1e-15)
        #expect(abs(run.inputGradient.scalars.reduce(0, +)) < 1e-15)
    }

    @Test("nn.LayerNorm's formula in NumPy: a (2, 4) sequence, weight and bias, a constant row giving the bias")
    func numpyReference() throws {
        // PyTorch's documented y = (x - E[x]) / √(Var[x] + ε) · γ + β, Var biased, in NumPy 2.4 (float64):
        //     x = np.array([[0.5, -1.0, 2.0, 0.25], [3.0, 3.0, 3.0, 3.0]])
        //     w = np.array([1.5, -0.5, 2.0, 1.0]); b = np.array([0.1, 0.2, -0.3, 0.0])
        //     (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * w + b
        // Row 0: mean 0.4375, variance 1.13671875. Row 1 has variance 0: x̂ = 0, y = b.
        let expected: [Double] = [
            0.18793117048865046, 0.8741389737463201, 2.6310390162883484, -0.1758623409773009, 0.1, 0.2, -0.3, 0,
        ]
        let parameters: [Double] = [1.5, -0.5, 2.0, 1.0, 0.1, 0.2, -0.3, 0.0]
        let scalars: [Double] = [0.5, -1.0, 2.0, 0.25, 3.0, 3.0, 3.0, 3.0]
        var norm = try LayerNorm<Double>(shape: [2, 4])
        let run = runLayer(&norm, x: try Tensor(shape: [1, 2, 4], scalars: scalars), parameters: parameters, dy: nil)
        expectClose(run.output.scalars, expected, tolerance: 1e-15)
        expectClose(norm.cache.mean.scalars, [0.4375, 3], tolerance: 0)
        var float = try LayerNorm<Float>(shape: [2, 4])
        let floatRun = runLayer(
            &float, x: try Tensor(shape: [1, 2, 4], scalars: scalars.map { Float($0) }), parameters: parameters.map { Float($0) }, dy: nil)
        expectClose(floatRun.output.scalars, expected.map { Float($0) }, tolerance: 1e-6)
    }

    @Test("A large common offset does not cancel in Float: the variance is taken about the mean, in a second pass")
    func largeOffsetInFloat() throws {
        // 10⁴ + (-1, 0, 1): Σx²/n - mean² would be 10⁸-sized terms whose difference, 2/3, is below
        // Float's resolution there (8); Σ(x - mean)²/n is exact.
        var norm = try LayerNorm<Float>(shape: [3])
        let run = runLayer(&norm, x: try Tensor(shape: [1, 3], scalars: [9_999, 10_000, 10_001]), parameters: [1, 1, 1, 0, 0, 0], dy: nil)
        expectClose(run.output.scalars, [-1.2247357, 0, 1.2247357], tolerance: 2e-7)
    }

    // MARK: Fast against naive

    /// Random shapes with odd sizes (`[features]` or `[time, features]`, a single feature too),
    /// weight, bias, input and output gradient; the kernels' passes against the naive loops.
    func fastEqualsNaive<Scalar: TensorScalar>(_: Scalar.Type, tolerance: Scalar) throws {
        for seed in UInt64(1)...30 {
            var g = SeededGenerator(seed: seed)
            let f = [1, 3, 5, 7, 13][g.index(below: 5)]
            let shape = g.index(below: 2) == 0 ? [f] : [[1, 3, 5][g.index(below: 3)], f]
            let batch = 1 + g.index(below: 4), count = batch * shape.reduce(1, *)
            let epsilon = [1e-5, 1e-3, 0.1][g.index(below: 3)]
            var norm = try LayerNorm<Scalar>(shape: shape, epsilon: epsilon)
            let x = try Tensor<Scalar>(shape: [batch] + shape, scalars: randomScalars(count, using: &g))
            let dy = try Tensor<Scalar>(shape: x.shape, scalars: randomScalars(count, using: &g))
            let parameters: [Scalar] = randomScalars(2 * f, using: &g)
            let weight = Tensor(vector: Array(parameters[..<f])), bias = Tensor(vector: Array(parameters[f...]))
            let run = runLayer(&norm, x: x, parameters: parameters, dy: dy)
            let rows = try x.reshaped(to: [count / f, f])
            let y = Naive.layerNormForward(rows, weight: weight, bias: bias, epsilon: epsilon)
            let naive = Naive.layerNormBackward(rows, outputGradient: try dy.reshaped(to: [count / f, f]), weight: weight, epsilon: epsilon)
            // s = 1/√(var + ε) magnifies rounding: a row of three uniform numbers can have a
            // variance near 1e-3 (s ≈ 30), so the bounds scale with the largest entry compared.
            func bound(_ expected: [Scalar]) -> Scalar { tolerance * Swift.max(1, expected.map { abs($0) }.max() ?? 0) }
            expectClose(run.output.scalars, y.scalars, tolerance: bound(y.scalars))
            let gradients = naive.weight.scalars + naive.bias.scalars
            expectClose(run.gradients, gradients, tolerance: bound(gradients))
            expectClose(run.inputGradient.scalars, naive.input.scalars, tolerance: bound(naive.input.scalars))
        }
    }

    @Test("Equals the naive row statistics and full-Jacobian backward, Double")
    func fastEqualsNaiveDouble() throws {
        // The naive loops run in Double too, summing in another order: a few ulps of the largest
        // entry (measured: at most 4.2e-16 of it over these 30 cases).
        try fastEqualsNaive(Double.self, tolerance: 1e-14)
    }

    @Test("Equals the naive row statistics and full-Jacobian backward, Float")
    func fastEqualsNaiveFloat() throws {
        // The naive loops run in Double and round once; the kernel rounds at every step in Float
        // (a sum of up to 13 terms, a square root, the Jacobian's three terms): a few ulps of the
        // largest entry, ulp 6e-8 at 1 (measured: at most 1.03e-6 of it, in dx).
        try fastEqualsNaive(Float.self, tolerance: 2e-6)
    }

    @Test("Training and evaluation compute the same: no batch statistics, no running state")
    func modeIndependent() throws {
        var g = SeededGenerator(seed: 4)
        var norm = try LayerNorm<Double>(shape: [3, 5])
        let x = Tensor<Double>.random([2, 3, 5], using: &g)
        let parameters: [Double] = randomScalars(10, using: &g)
        let training = runLayer(&norm, x: x, parameters: parameters, dy: nil).output
        #expect(runLayer(&norm, x: x, parameters: parameters, dy: nil, mode: .evaluation).output == training)
        // Each sample on its own gives its rows of the batch's output.
        let first = try Tensor<Double>(shape: [1, 3, 5], scalars: Array(x.scalars[..<15]))
        #expect(runLayer(&norm, x: first, parameters: parameters, dy: nil).output.scalars == Array(training.scalars[..<15]))
        #expect(norm.stateShapes.isEmpty)
    }

    @Test("Backward adds into the parameter gradients and leaves dx alone when not asked")
    func accumulates() throws {
        var g = SeededGenerator(seed: 9)
        var h = LayerHarness(try LayerNorm<Double>(shape: [4, 3]), seed: 2)
        h.parameters = randomScalars(6, using: &g)
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
        var h = LayerHarness(try LayerNorm<Float>(shape: [5, 3]), seed: 3)
        let x = Tensor<Float>.random([4, 5, 3], using: &g), dy = Tensor<Float>.random([4, 5, 3], using: &g)
        func addresses() -> [UnsafeRawPointer?] {
            let cache = h.layer.cache
            return [cache.output, cache.mean, cache.inverseDeviation, cache.inputGradient].map { tensor in
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

    @Test("nn.LayerNorm's parameters: weight ones and bias zeros, (features) each; shapes and names")
    func declarations() throws {
        let norm = try LayerNorm<Float>(shape: [8, 64])
        #expect(norm.parameterShapes.map(\.name) == ["weight", "bias"] && norm.parameterShapes.map(\.shape) == [[64], [64]])
        #expect(norm.inputShape == [8, 64] && norm.outputShape == [8, 64] && norm.features == 64 && norm.epsilon == 1e-5)
        let vector = try LayerNorm<Float>(shape: [5])
        #expect("\(norm)" == "LayerNorm(8×64)" && "\(vector)" == "LayerNorm(5)")
        let h = LayerHarness(try LayerNorm<Double>(shape: [3]), seed: 1)
        #expect(h.parameters == [1, 1, 1, 0, 0, 0])
        #expect("\(norm.converted(to: Double.self))" == "LayerNorm(8×64)")
    }

    @Test("Bad shapes and epsilons are refused with the layer named")
    func refused() {
        #expect(
            message { () throws(NetworkError) in try LayerNorm<Float>(shape: [2, 3, 4]) }.contains(
                "LayerNorm(2×3×4): takes (features) vectors or (time, features) sequences"))
        #expect(message { () throws(NetworkError) in try LayerNorm<Float>(shape: []) }.contains("takes (features) vectors"))
        #expect(message { () throws(NetworkError) in try LayerNorm<Float>(shape: [0]) }.contains("takes (features) vectors"))
        #expect(message { () throws(NetworkError) in try LayerNorm<Float>(shape: [4], epsilon: 0) }.contains("epsilon must be above 0, got 0.0"))
        #expect(message { () throws(NetworkError) in try LayerNorm<Float>(shape: [4], epsilon: .nan) }.contains("epsilon must be above 0"))
    }

    // MARK: Whole networks

    /// `[Dense(4→6, identity), LayerNorm(6), GELU(6), Dense(6→3, tanh)]` (the norm's layer planted
    /// when asked) with a batch of 3 and half squared error; the norm's weight and bias drawn
    /// away from 1 and 0, so that their gradients are checked in general position.
    static func featureNetwork(
        _ approximation: GELUApproximation, bug: LayerNormBug? = nil, seed: UInt64
    ) throws -> (Network<Double>, Tensor<Double>, Tensor<Double>) {
        let norm = try LayerNorm<Double>(shape: [6])
        let layers: [any Layer<Double>] = [
            try Dense<Double>(4, 6, activation: .identity), bug.map { PlantedLayerNorm(norm: norm, bug: $0) } ?? norm,
            try GELU<Double>(shape: [6], approximation: approximation), try Dense<Double>(6, 3, activation: .tanh),
        ]
        return try Self.checkedCase(layers, loss: .halfSquaredError, seed: seed)
    }

    /// The network of `layers`, initialized from `seed`, every LayerNorm's weight in [0.5, 1.5) and
    /// bias in [-0.5, 0.5), with a batch of 3 continuous inputs and matching targets.
    static func checkedCase(_ layers: [any Layer<Double>], loss: Loss, seed: UInt64) throws -> (Network<Double>, Tensor<Double>, Tensor<Double>) {
        var network = try Network<Double>(layers, loss: loss)
        network.initialize(seed: seed)
        var g = SeededGenerator(seed: seed)
        for tensor in network.parameterTensors where network.layers[tensor.layer].description.contains("LayerNorm") {
            for i in tensor.range { network.parameters[i] = tensor.tensor == "weight" ? g.uniform(0.5, 1.5) : g.uniform(-0.5, 0.5) }
        }
        let x = Tensor<Double>.random([3] + network.inputShape, using: &g)
        return (network, x, randomTargets(batch: 3, outputs: network.outputCount, loss: loss, using: &g))
    }

    @Test(
        "[Dense → LayerNorm → GELU → Dense] over features passes the gradient check, every parameter and input",
        arguments: GELUApproximation.allCases)
    func featureNetworkPasses(_ approximation: GELUApproximation) throws {
        for seed in UInt64(1)...5 {
            let (network, x, t) = try Self.featureNetwork(approximation, seed: seed)
            let report = try GradientCheck(checkInputs: true).run(on: network, inputs: x, targets: t)
            #expect(report.passed, "seed \(seed), \(network): \(report)")
            #expect(report.tensors.map(\.checked).reduce(0, +) == network.parameterCount + x.count)
        }
    }

    @Test("Over continuous sequences, LayerNorm first and after a per-position dense layer: every parameter and input")
    func continuousSequencesPass() throws {
        let cases: [[any Layer<Double>]] = [
            [
                try LayerNorm<Double>(shape: [4, 3]), try GELU<Double>(shape: [4, 3]),
                try Dense<Double>(3, 2, activation: .identity, time: 4),
            ],
            [
                try Dense<Double>(3, 5, activation: .tanh, time: 4), try LayerNorm<Double>(shape: [4, 5], epsilon: 1e-3),
                try GELU<Double>(shape: [4, 5], approximation: .tanh), try Dense<Double>(5, 2, activation: .identity, time: 4),
            ],
        ]
        for (i, layers) in cases.enumerated() {
            let (network, x, t) = try Self.checkedCase(layers, loss: .halfSquaredError, seed: 20 + UInt64(i))
            let report = try GradientCheck(checkInputs: true).run(on: network, inputs: x, targets: t)
            #expect(report.passed, "\(network): \(report)")
            #expect(report.tensors.map(\.checked).reduce(0, +) == network.parameterCount + x.count)
        }
    }

    @Test(
        "Token sequences: Embedding → per-position Dense → LayerNorm → GELU → per-position Dense, padding in the targets",
        arguments: GELUApproximation.allCases)
    func tokenSequencesPass(_ approximation: GELUApproximation) throws {
        for seed in UInt64(1)...8 {
            var g = SeededGenerator(seed: seed)
            let (batch, time, vocabulary) = (2 + g.index(below: 3), 2 + g.index(below: 5), 2 + g.index(below: 5))
            let (features, hidden) = (1 + g.index(below: 4), 2 + g.index(below: 5))
            let layers: [any Layer<Double>] = [
                try Embedding<Double>(vocabulary: vocabulary, features: features, time: time),
                try Dense<Double>(features, hidden, activation: .identity, time: time), try LayerNorm<Double>(shape: [time, hidden]),
                try GELU<Double>(shape: [time, hidden], approximation: approximation),
                try Dense<Double>(hidden, vocabulary, activation: .identity, time: time),
            ]
            var network = try Network<Double>(layers, loss: .sequenceCrossEntropy)
            network.initialize(seed: seed)
            for tensor in network.parameterTensors where tensor.layer == 2 {
                for i in tensor.range { network.parameters[i] = tensor.tensor == "weight" ? g.uniform(0.5, 1.5) : g.uniform(-0.5, 0.5) }
            }
            let x = SequenceNetworkGradientCheckTests.randomTokens(batch: batch, time: time, vocabulary: vocabulary, using: &g)
            let t = SequenceNetworkGradientCheckTests.randomTargets(batch: batch, time: time, vocabulary: vocabulary, using: &g)
            let report = try GradientCheck().run(on: network, inputs: x, targets: t)
            #expect(report.passed, "seed \(seed), \(network): \(report)")
            #expect(report.tensors.map(\.checked).reduce(0, +) == network.parameterCount)
        }
    }

    @Test("A bug planted in LayerNorm's input gradient is caught; the report names the tensors before it", arguments: LayerNormBug.allCases)
    func plantedBug(_ bug: LayerNormBug) throws {
        let (good, x, t) = try Self.featureNetwork(.none, seed: 3)
        var (buggy, _, _) = try Self.featureNetwork(.none, bug: bug, seed: 3)
        buggy.parameters = good.parameters
        // The bug is real: the same loss, another gradient.
        var (a, b) = (good, buggy)
        #expect(try a.lossAndGradients(x, targets: t, inputGradient: true) == b.lossAndGradients(x, targets: t, inputGradient: true))
        #expect(a.gradients != b.gradients)
        let report = try GradientCheck(checkInputs: true).run(on: buggy, inputs: x, targets: t)
        #expect(!report.passed, "\(bug) went unnoticed: \(report)")
        // A wrong input gradient: every tensor before the norm is handed it, the input too; the
        // norm's own weight and bias, and everything after, stay right.
        #expect(report.failingTensors.map(\.name) == ["layers.0.weight", "layers.0.bias", "input"], "\(report)")
    }
}
