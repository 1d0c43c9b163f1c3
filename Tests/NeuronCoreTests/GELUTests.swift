import Testing

@testable import NeuronCore

/// A GELU layer whose derivative misses the `x·Φ′(x)` term: `dx = dy ⊙ Φ(x)` (the tanh form: its
/// gate), as if the gate were a constant. Forward is the real layer's.
struct GateOnlyGELU<Scalar: TensorScalar>: Layer {
    var gelu: GELU<Scalar>
    var damaged = Tensor<Scalar>(zeros: [0, 0])

    var inputShape: [Int] { gelu.inputShape }
    var outputShape: [Int] { gelu.outputShape }
    var parameterShapes: [(name: String, shape: [Int])] { [] }
    var description: String { "GateOnly\(gelu)" }
    var output: Tensor<Scalar> { gelu.output }
    var inputGradient: Tensor<Scalar> { damaged }

    func initialize(parameters: UnsafeMutableBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>, using generator: inout SeededGenerator)
    {}
    mutating func forward(_ x: Tensor<Scalar>, parameters: UnsafeBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>, mode: LayerMode) {
        gelu.forward(x, parameters: parameters, state: state, mode: mode)
    }
    func converted<Other: TensorScalar>(to: Other.Type) -> any Layer<Other> {
        GateOnlyGELU<Other>(gelu: gelu.converted(to: Other.self) as! GELU<Other>)
    }
    mutating func backward(
        input x: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>,
        parameters: UnsafeBufferPointer<Scalar>, gradients: UnsafeMutableBufferPointer<Scalar>, computeInputGradient: Bool
    ) {
        damaged = Tensor(zeros: x.shape)
        for i in 0..<x.count { damaged[i] = dy[i] * gelu.cache.gate[i] }
    }
}

@Suite("GELU")
struct GELUTests {
    // MARK: By hand, and PyTorch's formulas

    @Test("GELU(1) = Φ(1) = 0.8413447460685429, the tanh form 0.8411919906082768; GELU(0) = 0 with slope 1/2")
    func handWorked() throws {
        // Φ(1) = (1 + erf(1/√2))/2 = 0.8413447460685429; GELU(1) = 1·Φ(1). The tanh form:
        // u = √(2/π)·(1 + 0.044715) = 0.8335565596009647, (1 + tanh u)/2 = 0.8411919906082768.
        // At 0 both are 0 with slope Φ(0) = 1/2 (0·φ(0) = 0); far out, GELU(x) → x and → 0.
        for approximation in GELUApproximation.allCases {
            var gelu = try GELU<Double>(shape: [5], approximation: approximation)
            let x = try Tensor<Double>(shape: [1, 5], scalars: [1, 0, 10, -10, -40])
            let run = runLayer(&gelu, x: x, parameters: [], dy: try Tensor(shape: [1, 5], repeating: 1))
            let one = approximation == .none ? 0.8413447460685429 : 0.8411919906082768
            expectClose(run.output.scalars, [one, 0, 10, 0, 0], tolerance: 1e-15)
            expectClose(run.inputGradient[1], 0.5, tolerance: 0)
            expectClose(run.inputGradient[2], 1, tolerance: 1e-15)
            #expect(run.inputGradient.scalars.allSatisfy { $0.isFinite })
        }
    }

    @Test("PyTorch's formulas in Python: values and derivatives at eight points, both forms, Double and Float")
    func pythonReference() throws {
        // Python 3's math.erf and NumPy 2.4 (float64), from nn.GELU's documented formulas:
        //     xs = np.array([-3., -1., -0.5, 0., 0.5, 1., 2., 4.])
        //     xs/2*(1 + erf(xs/sqrt(2)))                                      # approximate='none'
        //     xs/2*(1 + np.tanh(sqrt(2/pi)*(xs + 0.044715*xs**3)))            # approximate='tanh'
        //     cdf + xs*np.exp(-xs**2/2)/sqrt(2*pi)                            # the exact derivative
        //     0.5*(1 + t) + 0.5*xs*(1 - t*t)*sqrt(2/pi)*(1 + 3*0.044715*xs**2)  # the tanh form's, t = tanh(u)
        let xs: [Double] = [-3, -1, -0.5, 0, 0.5, 1, 2, 4]
        let expected: [GELUApproximation: (y: [Double], slope: [Double])] = [
            .none: (
                [
                    -0.00404969409489031, -0.15865525393145707, -0.15426876936299344, 0, 0.34573123063700656, 0.8413447460685429,
                    1.9544997361036416, 3.9998733150326675,
                ],
                [
                    -0.01194564720418392, -0.08331547058768629, 0.13250487534383715, 0.5, 0.8674951246561629, 1.0833154705876864,
                    1.085231801078197, 1.0005036496612265,
                ]
            ),
            .tanh: (
                [
                    -0.0036373920817729943, -0.1588080093917233, -0.15428599017485606, 0, 0.34571400982514394, 0.8411919906082768,
                    1.954597694087775, 3.9999297540518075,
                ],
                [
                    -0.011584166630969516, -0.08296408384578258, 0.13263009646535764, 0.5, 0.8673699035346424, 1.0829640838457826,
                    1.0860992566236183, 1.0003351231971231,
                ]
            ),
        ]
        for (approximation, (y, slope)) in expected {
            var gelu = try GELU<Double>(shape: [2, 4], approximation: approximation)
            let run = runLayer(&gelu, x: try Tensor(shape: [1, 2, 4], scalars: xs), parameters: [], dy: try Tensor(shape: [1, 2, 4], repeating: 1))
            expectClose(run.output.scalars, y, tolerance: 1e-15)
            expectClose(run.inputGradient.scalars, slope, tolerance: 1e-15)
            // Float: erf and tanh are rational approximations within 4.3e-7 of the function (see
            // Tensor/VectorErf.swift, VectorTanh.swift), times at most |x| = 4 in y and its slope.
            var float = try GELU<Float>(shape: [8], approximation: approximation)
            let floatRun = runLayer(
                &float, x: try Tensor(shape: [1, 8], scalars: xs.map { Float($0) }), parameters: [], dy: try Tensor(shape: [1, 8], repeating: 1))
            expectClose(floatRun.output.scalars, y.map { Float($0) }, tolerance: 2e-6)
            expectClose(floatRun.inputGradient.scalars, slope.map { Float($0) }, tolerance: 4e-6)
        }
    }

    // MARK: Fast against naive

    /// Random shapes with odd sizes (`[features]` and `[time, features]`), inputs across [-6, 6]
    /// where GELU bends, and an output gradient; the kernels against the naive formulas.
    func fastEqualsNaive<Scalar: TensorScalar>(_: Scalar.Type, output: Scalar, input: Scalar) throws {
        for seed in UInt64(1)...20 {
            var g = SeededGenerator(seed: seed)
            let f = [1, 3, 5, 7, 13][g.index(below: 5)]
            let shape = g.index(below: 2) == 0 ? [f] : [[1, 3, 5][g.index(below: 3)], f]
            let batch = 1 + g.index(below: 4), count = batch * shape.reduce(1, *)
            let approximation = GELUApproximation.allCases[g.index(below: 2)]
            var gelu = try GELU<Scalar>(shape: shape, approximation: approximation)
            let x = try Tensor<Scalar>(shape: [batch] + shape, scalars: (0..<count).map { _ in Scalar(g.uniform(-6, 6)) })
            let dy = try Tensor<Scalar>(shape: x.shape, scalars: randomScalars(count, using: &g))
            let run = runLayer(&gelu, x: x, parameters: [], dy: dy)
            expectClose(run.output.scalars, Naive.geluForward(x, approximation: approximation).scalars, tolerance: output)
            expectClose(run.inputGradient.scalars, Naive.geluBackward(x, outputGradient: dy, approximation: approximation).scalars, tolerance: input)
        }
    }

    @Test("Equals the naive formulas, Double: glibc's erf and tanh on both sides")
    func fastEqualsNaiveDouble() throws {
        // The same C library functions; the kernel multiplies by 1/√2 where the naive divides by
        // √2, and reads the tanh form's slope back from the gate: a few ulps of values up to 6.
        try fastEqualsNaive(Double.self, output: 1e-14, input: 1e-14)
    }

    @Test("Equals the naive formulas, Float: the vectorized erf and tanh against glibc's erff and tanhf")
    func fastEqualsNaiveFloat() throws {
        // erf and tanh within 4.3e-7 (Φ within 2.2e-7), times |x| ≤ 6: y within ~1.5e-6. The
        // tanh form's slope reads tanh back from the gate, x·2·gate·(1 - gate)·√(2/π)·(1 +
        // 0.134·x²), whose derivative in the gate reaches ~25 at |x| ≈ 2.5: within ~5e-6.
        // (Measured over 200 rows of 50: y within 9.5e-7, dx within 2.4e-7 exact and 2.9e-6 tanh.)
        try fastEqualsNaive(Float.self, output: 2e-6, input: 1e-5)
    }

    @Test("No parameters; no input gradient asked, nothing computed")
    func noParameters() throws {
        var gelu = try GELU<Double>(shape: [3])
        #expect(gelu.parameterCount == 0 && gelu.stateCount == 0)
        let x = try Tensor<Double>(shape: [1, 3], scalars: [1, 2, 3])
        var state: [Double] = []
        let empty: [Double] = []
        empty.withUnsafeBufferPointer { p in state.withUnsafeMutableBufferPointer { gelu.forward(x, parameters: p, state: $0, mode: .training) } }
        var gradients: [Double] = []
        empty.withUnsafeBufferPointer { p in
            gradients.withUnsafeMutableBufferPointer { g in
                gelu.backward(input: x, outputGradient: x, parameters: p, gradients: g, computeInputGradient: false)
            }
        }
        #expect(gelu.inputGradient.count == 0)
    }

    @Test("Caches are sized on the first batch and reused after: no buffer is reallocated")
    func cachesReused() throws {
        var g = SeededGenerator(seed: 1)
        var h = LayerHarness(try GELU<Float>(shape: [5, 3], approximation: .tanh), seed: 3)
        let x = Tensor<Float>.random([4, 5, 3], using: &g), dy = Tensor<Float>.random([4, 5, 3], using: &g)
        func addresses() -> [UnsafeRawPointer?] {
            [h.layer.cache.output, h.layer.cache.gate, h.layer.cache.inputGradient].map { tensor in
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

    @Test("Shapes, descriptions, and refusals")
    func declarations() throws {
        let gelu = try GELU<Float>(shape: [8, 64], approximation: .tanh)
        #expect(gelu.inputShape == [8, 64] && gelu.outputShape == [8, 64] && gelu.approximation == .tanh)
        let exact = try GELU<Float>(shape: [256])
        #expect("\(gelu)" == "GELU(8×64, tanh)" && "\(exact)" == "GELU(256)" && exact.approximation == .none)
        #expect("\(gelu.converted(to: Double.self))" == "GELU(8×64, tanh)")
        #expect(GELU<Float>.Approximation.allCases.map(\.rawValue) == ["none", "tanh"])
        #expect(message { () throws(NetworkError) in try GELU<Float>(shape: []) }.contains("GELU(): takes samples of a positive shape"))
        #expect(message { () throws(NetworkError) in try GELU<Float>(shape: [3, 0]) }.contains("takes samples of a positive shape"))
    }

    // MARK: Whole networks

    @Test(
        "A derivative missing its x·Φ′(x) term is caught; the report names the tensors before the GELU",
        arguments: GELUApproximation.allCases)
    func plantedBug(_ approximation: GELUApproximation) throws {
        // [Dense(4→6, identity), LayerNorm(6), GELU(6), Dense(6→3, tanh)] with the GELU planted.
        let (good, x, t) = try LayerNormTests.featureNetwork(approximation, seed: 5)
        var layers = good.layers
        layers[2] = GateOnlyGELU(gelu: layers[2] as! GELU<Double>)
        var buggy = try Network<Double>(layers, loss: .halfSquaredError)
        buggy.parameters = good.parameters
        var (a, b) = (good, buggy)
        #expect(try a.lossAndGradients(x, targets: t) == b.lossAndGradients(x, targets: t))
        #expect(a.gradients != b.gradients)
        let report = try GradientCheck(checkInputs: true).run(on: buggy, inputs: x, targets: t)
        #expect(!report.passed, "went unnoticed: \(report)")
        #expect(
            report.failingTensors.map(\.name) == ["layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias", "input"], "\(report)")
        #expect(report.tensors.filter { $0.layer == 3 }.allSatisfy { $0.passed }, "\(report)")
    }
}
