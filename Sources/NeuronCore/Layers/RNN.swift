// The Elman RNN: a tanh cell run along the time axis, its state carried from each position to the
// next, and backward through time. Its parameters are PyTorch's `nn.RNN`'s (one layer), in the same
// layout and order, so that a checkpoint loads with no permutation; the learned initial state `h0`
// follows them (PyTorch has none: there it is `hx`, expanded over the batch). Each pass is one call
// to its kernel (`Kernels/RecurrentKernels.swift`).

/// An Elman recurrent layer over a sequence, `h_t = tanh(W_ih·x_t + b_ih + W_hh·h_{t-1} + b_hh)`
/// from `h_{-1} = h0`, giving the state at every position, e.g. `RNN(64→64, time 16)`.
///
/// A sample is `(time, inputs)` in and `(time, hidden)` out, row-major: a batch's output is
/// `(batch, time, hidden)`, held as the matrix `(batch, time·hidden)`. Its parameter slice holds,
/// as `nn.RNN` names and lays them out, `weight_ih_l0 (hidden, inputs)`, `weight_hh_l0 (hidden,
/// hidden)`, `bias_ih_l0 (hidden)`, `bias_hh_l0 (hidden)`, then the initial state `h0 (hidden)`.
public struct RNN<Scalar: TensorScalar>: Layer {
    /// Positions per sample.
    public let time: Int
    /// Features per position going in.
    public let inputs: Int
    /// Units: the state's size, the features per position coming out.
    public let hidden: Int

    /// What forward keeps for backward, and backward's own buffers; sized when a batch shape is
    /// first seen, then reused.
    public struct Cache: Sendable {
        /// Every position's state `h_t`, `(batch, time·hidden)`: the output, and tanh's derivative `1 - h²`.
        public var output = Tensor<Scalar>(zeros: [0, 0])
        /// Every position's previous state `h_{t-1}` (`h0` first), `(batch·time, hidden)`: `dW_hh`'s operand.
        public var previousState = Tensor<Scalar>(zeros: [0, 0])
        /// `da`, the gradient of every position's pre-activation, `(batch·time, hidden)`.
        public var preActivationGradient = Tensor<Scalar>(zeros: [0, 0])
        /// The gradient carried back to the previous step's state, `(batch, hidden)`.
        public var carry = Tensor<Scalar>(zeros: [0, 0])
        /// `dx = da·W_ih`, `(batch, time·inputs)`, only when asked for.
        public var inputGradient = Tensor<Scalar>(zeros: [0, 0])
    }

    /// The layer's caches.
    public private(set) var cache = Cache()

    /// An RNN over `time` positions from `inputs` to `hidden` features.
    /// - Throws: ``NetworkError/invalidLayer(_:reason:)`` unless every size is at least 1 and its
    ///   parameters and a sample's features can be counted in an `Int`.
    public init(time: Int, inputs: Int, hidden: Int) throws(NetworkError) {
        try RecurrentParameters.check("RNN", gates: 1, time: time, inputs: inputs, hidden: hidden)
        self.time = time
        self.inputs = inputs
        self.hidden = hidden
    }

    public var description: String { "RNN(\(inputs)→\(hidden), time \(time))" }
    /// Its hidden units, each a tanh neuron over the input and the state before, at each position.
    public var explainableUnits: ExplainableUnits { .units(count: hidden, positions: time) }

    public var inputShape: [Int] { [time, inputs] }
    public var outputShape: [Int] { [time, hidden] }

    public var parameterShapes: [(name: String, shape: [Int])] {
        [
            ("weight_ih_l0", [hidden, inputs]), ("weight_hh_l0", [hidden, hidden]),
            ("bias_ih_l0", [hidden]), ("bias_hh_l0", [hidden]), ("h0", [hidden]),
        ]
    }

    /// The input and recurrent weights, products' matrices; not the biases or `h0`.
    public func isDecayed(_ tensor: String) -> Bool { tensor == "weight_ih_l0" || tensor == "weight_hh_l0" }

    public func converted<Other: TensorScalar>(to: Other.Type) -> any Layer<Other> {
        try! RNN<Other>(time: time, inputs: inputs, hidden: hidden)  // sizes were checked when self was built
    }

    public var output: Tensor<Scalar> { cache.output }
    public var inputGradient: Tensor<Scalar> { cache.inputGradient }
    /// The previous states, the pre-activation gradient and the carry.
    public var cacheCount: Int { time.times(hidden).times(3) }

    /// PyTorch's: every weight and bias `U(±1/√hidden)`; `h0` zero.
    public func initialize(
        parameters: UnsafeMutableBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>,
        using generator: inout SeededGenerator
    ) {
        RecurrentParameters(gates: 1, inputs: inputs, hidden: hidden).initialize(parameters, using: &generator)
    }

    // MARK: Forward

    /// Runs the layer along every sample: `h_t = tanh(W_ih·x_t + b_ih + W_hh·h_{t-1} + b_hh)`.
    public mutating func forward(
        _ x: Tensor<Scalar>, parameters: UnsafeBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>,
        mode: LayerMode
    ) {
        // x: (batch, time, inputs)  y, previousState: (batch, time, hidden)
        Kernels.rnnForward(
            x, parameters: parameters, time: time, inputs: inputs, hidden: hidden,
            previousState: &cache.previousState, into: &cache.output)
    }

    // MARK: Backward

    /// Backward through time: adds every parameter's gradient (`h0`'s included) into `gradients`,
    /// and `dx` when asked.
    public mutating func backward(
        input x: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>,
        parameters: UnsafeBufferPointer<Scalar>, gradients: UnsafeMutableBufferPointer<Scalar>,
        computeInputGradient: Bool
    ) {
        // x, dx: (batch, time, inputs)  y, dy, da: (batch, time, hidden)
        Kernels.rnnBackward(
            input: x, output: cache.output, outputGradient: dy, previousState: cache.previousState,
            parameters: parameters, gradients: gradients, time: time, inputs: inputs, hidden: hidden,
            preActivationGradient: &cache.preActivationGradient, carry: &cache.carry,
            computeInputGradient: computeInputGradient, inputGradient: &cache.inputGradient)
    }
}

extension Naive {
    /// The definition of ``RNN``'s forward pass, one sample, position and unit at a time, tanh
    /// from the C library.
    ///
    ///     // x: (batch, time, inputs)  W_ih: (hidden, inputs)  W_hh: (hidden, hidden)  b_ih, b_hh, h0: (hidden)
    ///     // →  a, y: (batch, time·hidden), a the pre-activation
    public static func rnnForward<Scalar>(
        _ x: Tensor<Scalar>, weightIH: Tensor<Scalar>, weightHH: Tensor<Scalar>, biasIH: Tensor<Scalar>, biasHH: Tensor<Scalar>,
        initialState h0: Tensor<Scalar>
    ) -> (preActivation: Tensor<Scalar>, output: Tensor<Scalar>) {
        let batch = x.shape[0], hidden = weightHH.rows, inputs = weightIH.columns, time = x.count / (batch * inputs)
        var a = Tensor<Scalar>(zeros: [batch, time * hidden]), y = a
        for n in 0..<batch {
            var h = h0.scalars
            for t in 0..<time {
                for j in 0..<hidden {
                    var sum = biasIH[j] + biasHH[j]
                    for i in 0..<inputs { sum += weightIH[j, i] * x[(n * time + t) * inputs + i] }
                    for k in 0..<hidden { sum += weightHH[j, k] * h[k] }
                    a[n, t * hidden + j] = sum
                    y[n, t * hidden + j] = Scalar.libmTanh(sum)
                }
                for j in 0..<hidden { h[j] = y[n, t * hidden + j] }
            }
        }
        return (a, y)
    }

    /// The definition of ``RNN``'s backward pass through time, from the pre-activation `a`: from
    /// the last position back, `da_t = (dy_t + dh_t) ⊙ tanh'(a_t)` and `dh_{t-1} = W_hhᵀ·da_t`;
    /// every weight's gradient the sum over positions of `da_t` times its operand there, each bias
    /// the sum of `da_t`, `h0`'s the sum of `dh_{-1}`.
    public static func rnnBackward<Scalar>(
        _ x: Tensor<Scalar>, weightIH: Tensor<Scalar>, weightHH: Tensor<Scalar>, initialState h0: Tensor<Scalar>,
        preActivation a: Tensor<Scalar>, output y: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>
    ) -> RecurrentGradients<Scalar> {
        let batch = x.shape[0], hidden = weightHH.rows, inputs = weightIH.columns, time = x.count / (batch * inputs)
        var dwih = Tensor<Scalar>(zeros: weightIH.shape), dwhh = Tensor<Scalar>(zeros: weightHH.shape)
        var dbih = Tensor<Scalar>(zeros: [hidden]), dbhh = dbih, dh0 = dbih
        var dx = Tensor<Scalar>(zeros: [batch, time * inputs])
        for n in 0..<batch {
            var dh = [Scalar](repeating: 0, count: hidden)
            for t in (0..<time).reversed() {
                var da = [Scalar](repeating: 0, count: hidden)
                for j in 0..<hidden {
                    da[j] = (dy[n, t * hidden + j] + dh[j]) * activationDerivative(.tanh, a[n, t * hidden + j])
                }
                for j in 0..<hidden {
                    dbih[j] += da[j]
                    dbhh[j] += da[j]
                    for i in 0..<inputs {
                        dwih[j, i] += da[j] * x[(n * time + t) * inputs + i]
                        dx[n, t * inputs + i] += weightIH[j, i] * da[j]
                    }
                    for k in 0..<hidden { dwhh[j, k] += da[j] * (t == 0 ? h0[k] : y[n, (t - 1) * hidden + k]) }
                }
                for k in 0..<hidden {
                    dh[k] = 0
                    for j in 0..<hidden { dh[k] += weightHH[j, k] * da[j] }
                }
            }
            for k in 0..<hidden { dh0[k] += dh[k] }
        }
        return RecurrentGradients(weightIH: dwih, weightHH: dwhh, biasIH: dbih, biasHH: dbhh, initialState: dh0, input: dx)
    }
}
