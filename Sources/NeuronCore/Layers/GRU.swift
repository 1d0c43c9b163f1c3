// The gated recurrent unit: PyTorch's `nn.GRU` cell (reset gate r, update gate z, candidate n) run
// along the time axis, its state carried from each position to the next, and backward through
// time. Its parameters are `nn.GRU`'s (one layer), in the same layout and gate order (r, z, n), so
// that a checkpoint loads with no permutation; the learned initial state `h0` follows them (PyTorch
// has none: there it is `hx`, expanded over the batch). Each pass is one call to its kernel
// (`Kernels/RecurrentKernels.swift`).

/// A gated recurrent layer over a sequence, PyTorch's GRU, giving the state at every position,
/// e.g. `GRU(64→64, time 16)`:
///
///     r = σ(W_ir·x + b_ir + W_hr·h + b_hr)    z = σ(W_iz·x + b_iz + W_hz·h + b_hz)
///     n = tanh(W_in·x + b_in + r ⊙ (W_hn·h + b_hn))    h' = (1 - z) ⊙ n + z ⊙ h,  from h = h0
///
/// A sample is `(time, inputs)` in and `(time, hidden)` out, row-major: a batch's output is
/// `(batch, time, hidden)`, held as the matrix `(batch, time·hidden)`. Its parameter slice holds,
/// as `nn.GRU` names and lays them out (gates stacked r, z, n), `weight_ih_l0 (3·hidden, inputs)`,
/// `weight_hh_l0 (3·hidden, hidden)`, `bias_ih_l0 (3·hidden)`, `bias_hh_l0 (3·hidden)`, then the
/// initial state `h0 (hidden)`.
public struct GRU<Scalar: TensorScalar>: Layer {
    /// Positions per sample.
    public let time: Int
    /// Features per position going in.
    public let inputs: Int
    /// Units: the state's size, the features per position coming out.
    public let hidden: Int

    /// What forward keeps for backward, and backward's own buffers; sized when a batch shape is
    /// first seen, then reused.
    public struct Cache: Sendable {
        /// Every position's state `h_t`, `(batch, time·hidden)`.
        public var output = Tensor<Scalar>(zeros: [0, 0])
        /// Every position's gates `[r, z, n]`, `(batch·time, 3·hidden)`: their derivatives come from them.
        public var gates = Tensor<Scalar>(zeros: [0, 0])
        /// Every position's `W_hh·h_{t-1} + b_hh`, `(batch·time, 3·hidden)`: `dr` needs its `n` third.
        public var hiddenProjection = Tensor<Scalar>(zeros: [0, 0])
        /// Every position's previous state `h_{t-1}` (`h0` first), `(batch·time, hidden)`: `dW_hh`'s operand.
        public var previousState = Tensor<Scalar>(zeros: [0, 0])
        /// The gradient of every position's gate pre-activations on the input side, `[da_r, da_z, da_n]`, `(batch·time, 3·hidden)`.
        public var gateGradient = Tensor<Scalar>(zeros: [0, 0])
        /// The same on the hidden side, `[da_r, da_z, da_n ⊙ r]`, `(batch·time, 3·hidden)`.
        public var hiddenGateGradient = Tensor<Scalar>(zeros: [0, 0])
        /// The gradient carried back to the previous step's state, `(batch, hidden)`.
        public var carry = Tensor<Scalar>(zeros: [0, 0])
        /// `dx`, `(batch, time·inputs)`, only when asked for.
        public var inputGradient = Tensor<Scalar>(zeros: [0, 0])
    }

    /// The layer's caches.
    public private(set) var cache = Cache()

    /// A GRU over `time` positions from `inputs` to `hidden` features.
    /// - Throws: ``NetworkError/invalidLayer(_:reason:)`` unless every size is at least 1 and its
    ///   parameters and a sample's features can be counted in an `Int`.
    public init(time: Int, inputs: Int, hidden: Int) throws(NetworkError) {
        try RecurrentParameters.check("GRU", gates: 3, time: time, inputs: inputs, hidden: hidden)
        self.time = time
        self.inputs = inputs
        self.hidden = hidden
    }

    public var description: String { "GRU(\(inputs)→\(hidden), time \(time))" }
    /// None: a unit is three neurons joined by the update; `GRUUnitExplanation` explains it.
    public var explainableUnits: ExplainableUnits {
        .none(
            reason:
                "a GRU unit is three neurons at each position (reset r, update z, candidate n, each with its own net) joined by h = (1 - z)·n + z·h₋₁, not one neuron's net and output: the neuron's table does not fit it; GRUUnitExplanation explains it gate by gate (neuron explain --checkpoint RUN does)"
        )
    }

    public var inputShape: [Int] { [time, inputs] }
    public var outputShape: [Int] { [time, hidden] }

    public var parameterShapes: [(name: String, shape: [Int])] {
        [
            ("weight_ih_l0", [3 * hidden, inputs]), ("weight_hh_l0", [3 * hidden, hidden]),
            ("bias_ih_l0", [3 * hidden]), ("bias_hh_l0", [3 * hidden]), ("h0", [hidden]),
        ]
    }

    /// The input and recurrent weights, products' matrices; not the biases or `h0`.
    public func isDecayed(_ tensor: String) -> Bool { tensor == "weight_ih_l0" || tensor == "weight_hh_l0" }

    public func converted<Other: TensorScalar>(to: Other.Type) -> any Layer<Other> {
        try! GRU<Other>(time: time, inputs: inputs, hidden: hidden)  // sizes were checked when self was built
    }

    public var output: Tensor<Scalar> { cache.output }
    public var inputGradient: Tensor<Scalar> { cache.inputGradient }
    /// The gates and their gradient, the hidden projection and its gradient (`3·hidden` a position
    /// each), the previous states and the carry.
    public var cacheCount: Int { time.times(hidden).times(14) }

    /// PyTorch's: every weight and bias `U(±1/√hidden)`; `h0` zero.
    public func initialize(
        parameters: UnsafeMutableBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>,
        using generator: inout SeededGenerator
    ) {
        RecurrentParameters(gates: 3, inputs: inputs, hidden: hidden).initialize(parameters, using: &generator)
    }

    // MARK: Forward

    /// Runs the layer along every sample, keeping the gates and states backward needs.
    public mutating func forward(
        _ x: Tensor<Scalar>, parameters: UnsafeBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>,
        mode: LayerMode
    ) {
        // x: (batch, time, inputs)  gates, hiddenProjection: (batch, time, 3·hidden)  y, previousState: (batch, time, hidden)
        Kernels.gruForward(
            x, parameters: parameters, time: time, inputs: inputs, hidden: hidden,
            gates: &cache.gates, hiddenProjection: &cache.hiddenProjection, previousState: &cache.previousState,
            into: &cache.output)
    }

    // MARK: Backward

    /// Backward through time: adds every parameter's gradient (`h0`'s included) into `gradients`,
    /// and `dx` when asked.
    public mutating func backward(
        input x: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>,
        parameters: UnsafeBufferPointer<Scalar>, gradients: UnsafeMutableBufferPointer<Scalar>,
        computeInputGradient: Bool
    ) {
        // x, dx: (batch, time, inputs)  dy: (batch, time, hidden)  gate gradients: (batch, time, 3·hidden)
        Kernels.gruBackward(
            input: x, outputGradient: dy, gates: cache.gates, hiddenProjection: cache.hiddenProjection,
            previousState: cache.previousState, parameters: parameters, gradients: gradients,
            time: time, inputs: inputs, hidden: hidden,
            gateGradient: &cache.gateGradient, hiddenGateGradient: &cache.hiddenGateGradient, carry: &cache.carry,
            computeInputGradient: computeInputGradient, inputGradient: &cache.inputGradient)
    }
}

extension Naive {
    /// The definition of ``GRU``'s forward pass, one sample, position and unit at a time, with the
    /// textbook sigmoid `1 / (1 + e^-a)` and the C library's tanh.
    ///
    ///     // x: (batch, time, inputs)  W_ih: (3·hidden, inputs)  W_hh: (3·hidden, hidden)  b_ih, b_hh: (3·hidden)  h0: (hidden)
    ///     // →  y: (batch, time·hidden)
    public static func gruForward<Scalar>(
        _ x: Tensor<Scalar>, weightIH: Tensor<Scalar>, weightHH: Tensor<Scalar>, biasIH: Tensor<Scalar>, biasHH: Tensor<Scalar>,
        initialState h0: Tensor<Scalar>
    ) -> Tensor<Scalar> {
        gruSteps(x, weightIH: weightIH, weightHH: weightHH, biasIH: biasIH, biasHH: biasHH, initialState: h0).output
    }

    /// One GRU position's pre-activations and state, as the definition states them.
    struct GRUStep<Scalar: TensorScalar> {
        /// `W_ir·x + b_ir + W_hr·h + b_hr`, `W_iz·x + b_iz + W_hz·h + b_hz`, `W_in·x + b_in + r ⊙ (W_hn·h + b_hn)`.
        var resetSum: [Scalar], updateSum: [Scalar], candidateSum: [Scalar]
        /// `W_hn·h + b_hn`.
        var hiddenCandidate: [Scalar]
        /// `h_{t-1}` and `h_t`.
        var previous: [Scalar], state: [Scalar]
    }

    /// Every position of every sample, `steps[n][t]`, and the output.
    static func gruSteps<Scalar>(
        _ x: Tensor<Scalar>, weightIH: Tensor<Scalar>, weightHH: Tensor<Scalar>, biasIH: Tensor<Scalar>, biasHH: Tensor<Scalar>,
        initialState h0: Tensor<Scalar>
    ) -> (steps: [[GRUStep<Scalar>]], output: Tensor<Scalar>) {
        let batch = x.shape[0], hidden = weightHH.columns, inputs = weightIH.columns, time = x.count / (batch * inputs)
        func σ(_ a: Scalar) -> Scalar { activation(.sigmoid, a) }
        var y = Tensor<Scalar>(zeros: [batch, time * hidden])
        var steps: [[GRUStep<Scalar>]] = []
        for n in 0..<batch {
            var h = h0.scalars
            steps.append([])
            for t in 0..<time {
                // Row g·hidden + j of W_ih and W_hh is unit j of gate g (r, z, n).
                func input(_ gate: Int, _ j: Int) -> Scalar {
                    var sum = biasIH[gate * hidden + j]
                    for i in 0..<inputs { sum += weightIH[gate * hidden + j, i] * x[(n * time + t) * inputs + i] }
                    return sum
                }
                func recurrent(_ gate: Int, _ j: Int) -> Scalar {
                    var sum = biasHH[gate * hidden + j]
                    for k in 0..<hidden { sum += weightHH[gate * hidden + j, k] * h[k] }
                    return sum
                }
                let zeros = [Scalar](repeating: 0, count: hidden)
                var step = GRUStep(
                    resetSum: zeros, updateSum: zeros, candidateSum: zeros, hiddenCandidate: zeros, previous: h, state: zeros)
                for j in 0..<hidden {
                    step.resetSum[j] = input(0, j) + recurrent(0, j)
                    step.updateSum[j] = input(1, j) + recurrent(1, j)
                    step.hiddenCandidate[j] = recurrent(2, j)
                    step.candidateSum[j] = input(2, j) + σ(step.resetSum[j]) * step.hiddenCandidate[j]
                    let z = σ(step.updateSum[j]), candidate = Scalar.libmTanh(step.candidateSum[j])
                    step.state[j] = (1 - z) * candidate + z * h[j]
                    y[n, t * hidden + j] = step.state[j]
                }
                h = step.state
                steps[n].append(step)
            }
        }
        return (steps, y)
    }

    /// The definition of ``GRU``'s backward pass through time, from the pre-activations (sigmoid's
    /// and tanh's derivatives written in them, ``Naive/activationDerivative(_:_:)``): from the last
    /// position back, with `dh = dy_t + dh_t`,
    ///
    ///     ∂h'/∂n = 1 - z    ∂h'/∂z = h - n    ∂h'/∂h = z (directly)    ∂n/∂r = tanh'·(W_hn·h + b_hn)
    ///
    /// each weight's gradient the sum over positions of its gate's pre-activation gradient times its
    /// operand, each bias the sum of that gradient, `dh_{t-1}` the direct path plus `W_hhᵀ` times the
    /// hidden side's gradients, and `h0`'s the sum of `dh_{-1}`.
    public static func gruBackward<Scalar>(
        _ x: Tensor<Scalar>, weightIH: Tensor<Scalar>, weightHH: Tensor<Scalar>, biasIH: Tensor<Scalar>, biasHH: Tensor<Scalar>,
        initialState h0: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>
    ) -> RecurrentGradients<Scalar> {
        let batch = x.shape[0], hidden = weightHH.columns, inputs = weightIH.columns, time = x.count / (batch * inputs)
        let steps = gruSteps(x, weightIH: weightIH, weightHH: weightHH, biasIH: biasIH, biasHH: biasHH, initialState: h0).steps
        var dwih = Tensor<Scalar>(zeros: weightIH.shape), dwhh = Tensor<Scalar>(zeros: weightHH.shape)
        var dbih = Tensor<Scalar>(zeros: [3 * hidden]), dbhh = dbih, dh0 = Tensor<Scalar>(zeros: [hidden])
        var dx = Tensor<Scalar>(zeros: [batch, time * inputs])
        for n in 0..<batch {
            var dh = [Scalar](repeating: 0, count: hidden)
            for t in (0..<time).reversed() {
                let s = steps[n][t]
                // The gradient of each gate's sum on the input side (ia) and on the hidden side (ha):
                // they differ only for n, whose hidden term is scaled by r.
                var ia = [Scalar](repeating: 0, count: 3 * hidden), ha = ia
                var previous = [Scalar](repeating: 0, count: hidden)
                for j in 0..<hidden {
                    let total = dy[n, t * hidden + j] + dh[j]
                    let r = activation(.sigmoid, s.resetSum[j]), z = activation(.sigmoid, s.updateSum[j])
                    let candidate = Scalar.libmTanh(s.candidateSum[j])
                    let dCandidateSum = total * (1 - z) * activationDerivative(.tanh, s.candidateSum[j])
                    let dUpdateSum = total * (s.previous[j] - candidate) * activationDerivative(.sigmoid, s.updateSum[j])
                    let dResetSum = dCandidateSum * s.hiddenCandidate[j] * activationDerivative(.sigmoid, s.resetSum[j])
                    ia[j] = dResetSum
                    ia[hidden + j] = dUpdateSum
                    ia[2 * hidden + j] = dCandidateSum
                    ha[j] = dResetSum
                    ha[hidden + j] = dUpdateSum
                    ha[2 * hidden + j] = dCandidateSum * r
                    previous[j] = total * z
                }
                for row in 0..<3 * hidden {
                    dbih[row] += ia[row]
                    dbhh[row] += ha[row]
                    for i in 0..<inputs {
                        dwih[row, i] += ia[row] * x[(n * time + t) * inputs + i]
                        dx[n, t * inputs + i] += weightIH[row, i] * ia[row]
                    }
                    for k in 0..<hidden {
                        dwhh[row, k] += ha[row] * s.previous[k]
                        previous[k] += weightHH[row, k] * ha[row]
                    }
                }
                dh = previous
            }
            for k in 0..<hidden { dh0[k] += dh[k] }
        }
        return RecurrentGradients(weightIH: dwih, weightHH: dwhh, biasIH: dbih, biasHH: dbhh, initialState: dh0, input: dx)
    }
}
