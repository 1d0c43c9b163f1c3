import Testing

@testable import NeuronCore

/// A realistic mistake in a recurrent layer's backward pass, planted by ``PlantedRecurrent``.
enum RecurrentBug: String, Sendable, CaseIterable {
    /// GRU: the reset gate's gradient takes `W_hn·h` for `W_hn·h + b_hn`, the bias left out.
    case resetGateWithoutCandidateBias
    /// RNN: backpropagation through time truncated to one step, no gradient carried to the previous state.
    case stateGradientNotCarried
}

/// A recurrent layer with a bug planted in its backward pass: forward is the real layer's, backward
/// the real kernel run on what the bug would have used.
struct PlantedRecurrent<Scalar: TensorScalar>: Layer {
    var layer: any Layer<Scalar>
    let bug: RecurrentBug
    var damaged = Tensor<Scalar>(zeros: [0, 0])
    var scratch = (Tensor<Scalar>(zeros: [0, 0]), Tensor<Scalar>(zeros: [0, 0]), Tensor<Scalar>(zeros: [0, 0]))

    var inputShape: [Int] { layer.inputShape }
    var outputShape: [Int] { layer.outputShape }
    var parameterShapes: [(name: String, shape: [Int])] { layer.parameterShapes }
    var description: String { "Planted(\(bug), \(layer))" }
    var output: Tensor<Scalar> { layer.output }
    var inputGradient: Tensor<Scalar> { damaged }

    func initialize(parameters: UnsafeMutableBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>, using generator: inout SeededGenerator)
    {
        layer.initialize(parameters: parameters, state: state, using: &generator)
    }
    mutating func forward(_ x: Tensor<Scalar>, parameters: UnsafeBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>, mode: LayerMode) {
        layer.forward(x, parameters: parameters, state: state, mode: mode)
    }
    func converted<Other: TensorScalar>(to: Other.Type) -> any Layer<Other> {
        PlantedRecurrent<Other>(layer: layer.converted(to: Other.self), bug: bug)
    }

    mutating func backward(
        input x: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>,
        parameters: UnsafeBufferPointer<Scalar>, gradients: UnsafeMutableBufferPointer<Scalar>, computeInputGradient: Bool
    ) {
        switch bug {
        case .resetGateWithoutCandidateBias:
            // The saved W_hn·h + b_hn with b_hn taken back out: the only place backward reads it is dr.
            let gru = layer as! GRU<Scalar>
            let (h, at) = (gru.hidden, RecurrentParameters(gates: 3, inputs: gru.inputs, hidden: gru.hidden))
            var projection = gru.cache.hiddenProjection
            for position in 0..<projection.rows {
                for j in 0..<h { projection[position, 2 * h + j] -= parameters[at.biasHH + 2 * h + j] }
            }
            Kernels.gruBackward(
                input: x, outputGradient: dy, gates: gru.cache.gates, hiddenProjection: projection, previousState: gru.cache.previousState,
                parameters: parameters, gradients: gradients, time: gru.time, inputs: gru.inputs, hidden: h,
                gateGradient: &scratch.0, hiddenGateGradient: &scratch.1, carry: &scratch.2,
                computeInputGradient: computeInputGradient, inputGradient: &damaged)
        case .stateGradientNotCarried:
            // W_hh carries the gradient back a step, and backward reads it for nothing else: zeroed,
            // every step's gradient stops at its own step.
            let rnn = layer as! RNN<Scalar>
            let at = RecurrentParameters(gates: 1, inputs: rnn.inputs, hidden: rnn.hidden)
            var truncated = Array(parameters)
            for i in at.weightHH..<at.biasIH { truncated[i] = 0 }
            truncated.withUnsafeBufferPointer { p in
                layer.backward(input: x, outputGradient: dy, parameters: p, gradients: gradients, computeInputGradient: computeInputGradient)
            }
            damaged = layer.inputGradient
        }
    }
}

@Suite("Recurrent layers: RNN and GRU, forward and backward through time")
struct RecurrentTests {
    /// The naive references' operands, read out of a layer's parameter slice (PyTorch's layout).
    static func tensors<Scalar>(_ p: [Scalar], gates: Int, inputs: Int, hidden: Int) throws -> (
        weightIH: Tensor<Scalar>, weightHH: Tensor<Scalar>, biasIH: Tensor<Scalar>, biasHH: Tensor<Scalar>, initialState: Tensor<Scalar>
    ) {
        let at = RecurrentParameters(gates: gates, inputs: inputs, hidden: hidden), width = gates * hidden
        return (
            try Tensor(shape: [width, inputs], scalars: Array(p[at.weightIH..<at.weightHH])),
            try Tensor(shape: [width, hidden], scalars: Array(p[at.weightHH..<at.biasIH])),
            Tensor(vector: Array(p[at.biasIH..<at.biasHH])), Tensor(vector: Array(p[at.biasHH..<at.initialState])),
            Tensor(vector: Array(p[at.initialState..<at.count]))
        )
    }

    // MARK: Worked by hand, and against PyTorch's equations

    @Test("A 1-unit RNN over 2 steps, worked by hand")
    func handWorkedRNN() throws {
        // w_ih = 0.5, w_hh = -1, b_ih = 0.1, b_hh = 0.2, h0 = 0.3; x = [1, 2]
        // h_0 = tanh(0.5·1 + 0.1 - 0.3 + 0.2) = tanh(0.5) = 0.46211715726000974
        // h_1 = tanh(0.5·2 + 0.1 - h_0 + 0.2) = tanh(1.3 - 0.46211715726000974) = 0.6846860472584387
        var rnn = try RNN<Double>(time: 2, inputs: 1, hidden: 1)
        let x = try Tensor<Double>(shape: [1, 2, 1], scalars: [1, 2])
        // dy = [1, 1] (the loss h_0 + h_1):
        // da_1 = 1 - h_1² = 0.531205016689615
        // da_0 = (1 + w_hh·da_1)(1 - h_0²) = 0.3686827518502521
        // dw_ih = da_0·1 + da_1·2 = 1.431092785229482    dw_hh = da_0·h0 + da_1·h_0 = 0.3560837777899365
        // db_ih = db_hh = da_0 + da_1 = 0.8998877685398671    dh0 = w_hh·da_0 = -0.3686827518502521
        // dx = w_ih·[da_0, da_1] = [0.18434137592512606, 0.2656025083448075]
        let run = runLayer(&rnn, x: x, parameters: [0.5, -1, 0.1, 0.2, 0.3], dy: try Tensor(rows: [[1, 1]]))
        let tolerance = 8 * Double.ulpOfOne  // a few roundings of numbers below 2
        expectClose(run.output.scalars, [0.46211715726000974, 0.6846860472584387], tolerance: tolerance)
        expectClose(
            run.gradients, [1.431092785229482, 0.3560837777899365, 0.8998877685398671, 0.8998877685398671, -0.3686827518502521],
            tolerance: tolerance)
        expectClose(run.inputGradient.scalars, [0.18434137592512606, 0.2656025083448075], tolerance: tolerance)
    }

    @Test("A GRU gives PyTorch's nn.GRU outputs for fixed weights, in Double and Float")
    func pytorchReference() throws {
        func check<Scalar: TensorScalar>(_: Scalar.Type, tolerance: Scalar) throws {
            // Batch 2, time 3, inputs 2, hidden 3, the weights in nn.GRU's layout and gate order (r, z, n):
            // w_ih[k] = (k - 8.5)/10, w_hh[k] = (13 - k)/20, b_ih[k] = (k - 4)/10, b_hh[k] = (4 - k)/15,
            // h0 = [0.2, -0.1, 0.3] (hx in PyTorch), x[k] = (k mod 5 - 2)/2.
            var gru = try GRU<Scalar>(time: 3, inputs: 2, hidden: 3)
            let weightIH: [Scalar] = (0..<18).map { (Scalar($0) - 8.5) / 10 }
            let weightHH: [Scalar] = (0..<27).map { (13 - Scalar($0)) / 20 }
            let biasIH: [Scalar] = (0..<9).map { (Scalar($0) - 4) / 10 }
            let biasHH: [Scalar] = (0..<9).map { (4 - Scalar($0)) / 15 }
            let parameters = weightIH + weightHH + biasIH + biasHH + [0.2, -0.1, 0.3]
            #expect(parameters.count == gru.parameterCount)
            let x = try Tensor<Scalar>(shape: [2, 3, 2], scalars: (0..<12).map { (Scalar($0 % 5) - 2) / 2 })
            // Computed once in NumPy 2.4.6 from nn.GRU's documented equations (torch is not installed
            // here); each row is one sample's (time, hidden), row-major.
            let expected: [[Double]] = [
                [
                    -0.09906788826390867, -0.3942419636639081, -0.3368005183470716, 0.19437223878761012, 0.09115014162733126,
                    0.11641513662167716, 0.0805149711941112, 0.05017145134253263, 0.08291717499255541,
                ],
                [
                    0.04403980942514825, -0.1508118841511491, 0.005339747663861416, 0.4049158972330928, 0.3324404032340462,
                    0.3756748268699411, -0.002666033006979346, -0.23135414254563477, -0.3861162229036481,
                ],
            ]
            let run = runLayer(&gru, x: x, parameters: parameters, dy: nil)
            expectClose(run.output.scalars, expected.joined().map { Scalar($0) }, tolerance: tolerance)
        }
        // Double: NumPy's exp and tanh against glibc's and sigmoid through tanh, a few ulps through
        // 3 steps (1.7e-16 found). Float: the parameters themselves rounded to Float and the
        // vectorized tanh (9e-8 found).
        try check(Double.self, tolerance: 1e-15)
        try check(Float.self, tolerance: 5e-7)
    }

    // MARK: Fast against naive

    /// Runs `layer` and the naive definitions on random parameters (`h0` too), inputs and output
    /// gradients, and compares output, every parameter's gradient and the input gradient.
    static func compareWithNaive<Scalar: TensorScalar>(
        gru: Bool, _: Scalar.Type, batch: Int, time: Int, inputs: Int, hidden: Int, tolerance: Scalar
    ) throws {
        var g = SeededGenerator(seed: UInt64(batch * 1000 + time * 100 + inputs * 10 + hidden))
        let gates = gru ? 3 : 1
        let count = RecurrentParameters(gates: gates, inputs: inputs, hidden: hidden).count
        let parameters: [Scalar] = randomScalars(count, using: &g)
        let x = Tensor<Scalar>.random([batch, time, inputs], using: &g)
        let dy = Tensor<Scalar>.random([batch, time * hidden], using: &g)
        let p = try tensors(parameters, gates: gates, inputs: inputs, hidden: hidden)
        let run: LayerRun<Scalar>
        let reference: (Tensor<Scalar>, [Tensor<Scalar>])
        if gru {
            var layer = try GRU<Scalar>(time: time, inputs: inputs, hidden: hidden)
            run = runLayer(&layer, x: x, parameters: parameters, dy: dy)
            let y = Naive.gruForward(
                x, weightIH: p.weightIH, weightHH: p.weightHH, biasIH: p.biasIH, biasHH: p.biasHH, initialState: p.initialState)
            let d = Naive.gruBackward(
                x, weightIH: p.weightIH, weightHH: p.weightHH, biasIH: p.biasIH, biasHH: p.biasHH, initialState: p.initialState,
                outputGradient: dy)
            reference = (y, [d.weightIH, d.weightHH, d.biasIH, d.biasHH, d.initialState, d.input])
        } else {
            var layer = try RNN<Scalar>(time: time, inputs: inputs, hidden: hidden)
            run = runLayer(&layer, x: x, parameters: parameters, dy: dy)
            let f = Naive.rnnForward(
                x, weightIH: p.weightIH, weightHH: p.weightHH, biasIH: p.biasIH, biasHH: p.biasHH, initialState: p.initialState)
            let d = Naive.rnnBackward(
                x, weightIH: p.weightIH, weightHH: p.weightHH, initialState: p.initialState,
                preActivation: f.preActivation, output: f.output, outputGradient: dy)
            reference = (f.output, [d.weightIH, d.weightHH, d.biasIH, d.biasHH, d.initialState, d.input])
        }
        expectClose(run.output.scalars, reference.0.scalars, tolerance: tolerance)
        let parameterGradients = reference.1.dropLast().flatMap(\.scalars)
        expectClose(run.gradients, parameterGradients, tolerance: tolerance)
        expectClose(run.inputGradient.scalars, reference.1.last!.scalars, tolerance: tolerance)
        #expect(run.output.count == batch * time * hidden && run.inputGradient.count == batch * time * inputs)
    }

    /// Odd sizes (batch 3, time 5, inputs 4, hidden 6), a single step, a single unit, and hidden
    /// 13 (a GRU cell's backward runs 8 units as one vector, then 5 lane by lane).
    static let sizes = [(3, 5, 4, 6), (3, 1, 4, 6), (1, 1, 1, 1), (2, 7, 3, 1), (1, 4, 1, 5), (2, 3, 4, 13)]

    @Test("RNN: fast and naive agree on every output and gradient, Float and Double", arguments: sizes)
    func rnnMatchesNaive(batch: Int, time: Int, inputs: Int, hidden: Int) throws {
        // The two sum the same terms in different orders (BLAS's blocks against one loop) and apply
        // tanh differently in Float (the vectorized approximation, within 4e-7, against tanhf): at
        // most 1.1e-15 apart in Double and 9.5e-7 in Float on these sizes. The tolerances leave
        // about 10× and 4× that, for the rounding a step adds carried through 7 steps.
        try Self.compareWithNaive(gru: false, Double.self, batch: batch, time: time, inputs: inputs, hidden: hidden, tolerance: 1e-14)
        try Self.compareWithNaive(gru: false, Float.self, batch: batch, time: time, inputs: inputs, hidden: hidden, tolerance: 4e-6)
    }

    @Test("GRU: fast and naive agree on every output and gradient, Float and Double", arguments: sizes)
    func gruMatchesNaive(batch: Int, time: Int, inputs: Int, hidden: Int) throws {
        // As the RNN's (at most 5.6e-16 and 2.8e-7 apart); the gates' sigmoid here is
        // (1 + tanh(a/2))/2 and there 1/(1 + e^-a), the same function a few ulps apart.
        try Self.compareWithNaive(gru: true, Double.self, batch: batch, time: time, inputs: inputs, hidden: hidden, tolerance: 1e-14)
        try Self.compareWithNaive(gru: true, Float.self, batch: batch, time: time, inputs: inputs, hidden: hidden, tolerance: 4e-6)
    }

    @Test("Backward adds into the gradient buffer; dx only when asked")
    func accumulates() throws {
        var g = SeededGenerator(seed: 4)
        var h = LayerHarness(try GRU<Double>(time: 3, inputs: 2, hidden: 4), seed: 2)
        let x = Tensor<Double>.random([2, 3, 2], using: &g), dy = Tensor<Double>.random([2, 12], using: &g)
        _ = h.forward(x)
        h.backward(x, dy, inputGradient: true)
        let once = h.gradients, dx = h.layer.inputGradient
        h.backward(x, dy, inputGradient: false)
        expectClose(h.gradients, once.map { 2 * $0 }, tolerance: 1e-15)
        #expect(h.layer.inputGradient == dx)
    }

    @Test("Caches are sized on the first batch and reused after: no buffer is reallocated")
    func cachesReused() throws {
        func addresses<L: Layer>(_ layer: L) -> [UnsafeRawPointer?] {
            let mirror = Mirror(reflecting: Mirror(reflecting: layer).descendant("cache")!)
            return mirror.children.map { ($0.value as! Tensor<L.Scalar>).withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) } }
        }
        func check<L: Layer>(_ layer: L) throws where L.Scalar == Float {
            var g = SeededGenerator(seed: 1)
            var h = LayerHarness(layer, seed: 3)
            let x = Tensor<Float>.random([4, 5, 3], using: &g), dy = Tensor<Float>.random([4, 5 * 2], using: &g)
            _ = h.forward(x)
            h.backward(x, dy, inputGradient: true)
            let first = addresses(h.layer)
            for _ in 0..<3 {
                _ = h.forward(x)
                h.backward(x, dy, inputGradient: true)
            }
            #expect(addresses(h.layer) == first)
        }
        try check(try RNN<Float>(time: 5, inputs: 3, hidden: 2))
        try check(try GRU<Float>(time: 5, inputs: 3, hidden: 2))
    }

    // MARK: The layers' declarations

    @Test("PyTorch's parameter names, shapes and order; h0 last")
    func parameterLayout() throws {
        let gru = try GRU<Float>(time: 16, inputs: 64, hidden: 32)
        #expect(gru.parameterShapes.map(\.name) == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "h0"])
        #expect(gru.parameterShapes.map(\.shape) == [[96, 64], [96, 32], [96], [96], [32]])
        #expect(gru.inputShape == [16, 64] && gru.outputShape == [16, 32])
        #expect("\(gru)" == "GRU(64→32, time 16)")
        let rnn = try RNN<Float>(time: 5, inputs: 4, hidden: 6)
        #expect(rnn.parameterShapes.map(\.name) == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "h0"])
        #expect(rnn.parameterShapes.map(\.shape) == [[6, 4], [6, 6], [6], [6], [6]])
        #expect(rnn.parameterCount == 6 * 4 + 6 * 6 + 6 + 6 + 6)
        #expect("\(rnn)" == "RNN(4→6, time 5)")
        // GRU(3→4) then RNN(4→6), both over 5 positions: each tensor named as a checkpoint names it.
        let network = try Network<Float>([try GRU<Float>(time: 5, inputs: 3, hidden: 4), rnn], loss: .halfSquaredError)
        #expect(
            network.parameterTensors.map(\.name).prefix(6) == [
                "layers.0.weight_ih_l0", "layers.0.weight_hh_l0", "layers.0.bias_ih_l0", "layers.0.bias_hh_l0", "layers.0.h0",
                "layers.1.weight_ih_l0",
            ])
        #expect(network.outputCount == 30)
    }

    @Test("PyTorch's initialization: U(±1/√hidden) for every weight and bias, h0 zero")
    func initialization() throws {
        func check<L: Layer>(_ layer: L) where L.Scalar == Double {
            let p = LayerHarness(layer, seed: 1).parameters
            let limit = 1 / 5.0, h0 = p.count - 25
            #expect(p[..<h0].allSatisfy { abs($0) <= limit } && p[..<h0].contains { abs($0) > 0.95 * limit })
            #expect(p[h0...].allSatisfy { $0 == 0 })
            #expect(LayerHarness(layer, seed: 1).parameters == p && LayerHarness(layer, seed: 2).parameters != p)
        }
        check(try GRU<Double>(time: 2, inputs: 30, hidden: 25))
        check(try RNN<Double>(time: 2, inputs: 30, hidden: 25))
    }

    @Test("Sizes below 1 and counts past Int are refused")
    func badSizes() throws {
        #expect(throws: NetworkError.self) { try GRU<Float>(time: 0, inputs: 3, hidden: 2) }
        #expect(throws: NetworkError.self) { try RNN<Float>(time: 3, inputs: 0, hidden: 2) }
        #expect(throws: NetworkError.self) { try RNN<Float>(time: 3, inputs: 2, hidden: 0) }
        #expect(message { () throws(NetworkError) in try GRU<Float>(time: 1, inputs: 1, hidden: 1 << 32) }.contains("more than can be counted"))
        #expect(message { () throws(NetworkError) in try RNN<Float>(time: 1 << 40, inputs: 1 << 30, hidden: 1) }.contains("features"))
        #expect(
            message { () throws(NetworkError) in try RNN<Float>(time: 0, inputs: 1, hidden: 1) }
                == "RNN(1→1, time 0): time, inputs and hidden must be at least 1")
    }

    // MARK: Whole networks, gradient-checked

    /// A network of `layers` with every parameter drawn from `seed` (`h0` too, which starts at zero),
    /// a batch of 3 and targets for the half squared error.
    static func checkedCase(_ layers: [any Layer<Double>], seed: UInt64) throws -> (Network<Double>, Tensor<Double>, Tensor<Double>) {
        var network = try Network<Double>(layers, loss: .halfSquaredError)
        network.initialize(seed: seed)
        var g = SeededGenerator(seed: seed)
        for tensor in network.parameterTensors where tensor.tensor == "h0" {
            for i in tensor.range { network.parameters[i] = g.uniform(-0.5, 0.5) }
        }
        let x = Tensor<Double>.random([3] + network.inputShape, using: &g)
        return (network, x, randomTargets(batch: 3, outputs: network.outputCount, loss: .halfSquaredError, using: &g))
    }

    @Test(
        "Whole networks pass the gradient check, every parameter and input (central differences, Double)",
        arguments: [
            "RNN", "GRU", "GRU → RNN", "RNN → Flatten → Dense", "GRU, one step", "RNN → GRU, one unit",
        ])
    func gradientCheck(_ name: String) throws {
        let layers: [any Layer<Double>]
        switch name {
        case "RNN": layers = [try RNN<Double>(time: 4, inputs: 3, hidden: 5)]
        case "GRU": layers = [try GRU<Double>(time: 4, inputs: 3, hidden: 5)]
        case "GRU → RNN": layers = [try GRU<Double>(time: 5, inputs: 2, hidden: 4), try RNN<Double>(time: 5, inputs: 4, hidden: 3)]
        case "RNN → Flatten → Dense":
            layers = [
                try RNN<Double>(time: 3, inputs: 2, hidden: 4), try Flatten<Double>(input: [3, 4]), try Dense<Double>(12, 2, activation: .tanh),
            ]
        case "GRU, one step": layers = [try GRU<Double>(time: 1, inputs: 4, hidden: 6)]
        default: layers = [try RNN<Double>(time: 6, inputs: 2, hidden: 1), try GRU<Double>(time: 6, inputs: 1, hidden: 1)]
        }
        let (network, x, t) = try Self.checkedCase(layers, seed: 11)
        let report = try GradientCheck(checkInputs: true).run(on: network, inputs: x, targets: t)
        #expect(report.passed, "\(report)")
        #expect(report.tensors.map(\.checked).reduce(0, +) == network.parameterCount + x.count)
    }

    @Test("A bug planted in a recurrent layer's backward is caught, and the report names its tensors", arguments: RecurrentBug.allCases)
    func plantedBug(_ bug: RecurrentBug) throws {
        // [RNN, planted, RNN]: the planted layer at index 1, a layer before it to receive what it
        // hands back, a layer after it that must stay clean.
        let victim: any Layer<Double> =
            bug == .resetGateWithoutCandidateBias
            ? try GRU<Double>(time: 4, inputs: 3, hidden: 4) : try RNN<Double>(time: 4, inputs: 3, hidden: 4)
        let layers: [any Layer<Double>] = [
            try RNN<Double>(time: 4, inputs: 2, hidden: 3), PlantedRecurrent(layer: victim, bug: bug), try RNN<Double>(time: 4, inputs: 4, hidden: 2),
        ]
        let (network, x, t) = try Self.checkedCase(layers, seed: 7)
        let report = try GradientCheck(checkInputs: true).run(on: network, inputs: x, targets: t)
        #expect(!report.passed, "\(bug) went unnoticed: \(report)")
        let failing = Set(report.failingTensors.map(\.name))
        // Its own weights fail, and so does everything before it, which it hands a wrong gradient.
        #expect(
            failing.isSuperset(of: ["layers.1.weight_ih_l0", "layers.1.weight_hh_l0", "layers.1.bias_ih_l0", "layers.0.weight_hh_l0", "input"]),
            "\(report)")
        if bug == .stateGradientNotCarried { #expect(failing.contains("layers.1.h0"), "nothing reached h0: \(report)") }
        #expect(report.tensors.filter { $0.layer == 2 }.allSatisfy { $0.passed }, "\(report)")
    }
}
