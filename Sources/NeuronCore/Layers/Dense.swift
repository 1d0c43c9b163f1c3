// The dense layer: one matrix product plus a bias, then the activation; backward is two more
// products and a column sum. The whole batch goes through BLAS; no per-sample loop. Each pass is
// one call to its kernel (`Kernels/DenseKernels.swift`). Per position (a sequence), the same
// weights apply at every position: the batch's positions are just more rows of the one product.

/// A fully connected layer `y = f(x·w + b)`, e.g. `Dense(784→256, tanh)`; with `time`, the same
/// layer applied at every position of a sequence, e.g. `Dense(64→27, identity, per position)`.
///
/// Its parameter slice holds the weight `w: (inputs, outputs)` row-major, then the bias `b: (outputs)`,
/// with or without `time` (checkpoints keep nn.Linear's layout either way).
public struct Dense<Scalar: TensorScalar>: ActivatedLayer {
    /// Features per sample going in.
    public let inputs: Int
    /// Units: features per sample coming out.
    public let outputs: Int
    /// The non-linearity at the output.
    public let activation: Activation
    /// Positions per sample when the layer runs at every position of a sequence (samples of shape
    /// `[time, inputs]`); nil for samples of shape `[inputs]`.
    public let time: Int?

    /// What forward keeps for backward, and backward's own buffers; sized when a batch shape is
    /// first seen, then reused (``Tensor/resize(to:)`` keeps capacity).
    public struct Cache: Sendable {
        /// `y = f(x·w + b)`: tanh, sigmoid and relu differentiate from it alone (softmax: the logits).
        public var output = Tensor<Scalar>(zeros: [0, 0])
        /// `dz = dy ⊙ f'(z)`.
        public var preActivationGradient = Tensor<Scalar>(zeros: [0, 0])
        /// `dx = dz·wᵀ`, only when asked for.
        public var inputGradient = Tensor<Scalar>(zeros: [0, 0])
    }

    /// The layer's caches.
    public private(set) var cache = Cache()

    /// A dense layer from `inputs` to `outputs` features, on vectors or, with `time`, at every
    /// position of a sequence.
    /// - Parameters:
    ///   - inputs: features per sample (per position) going in.
    ///   - outputs: features per sample (per position) coming out.
    ///   - activation: the non-linearity at the output.
    ///   - time: positions per sample, for samples of shape `[time, inputs]`; nil (the default)
    ///     for samples of shape `[inputs]`.
    /// - Throws: ``NetworkError/invalidLayer(_:reason:)`` unless both sizes (and `time`, when
    ///   given) are at least 1 and its `(inputs + 1) · outputs` parameters can be counted in an
    ///   `Int`, or for a softmax per position (the ``Loss/sequenceCrossEntropy`` head applies it
    ///   to identity logits).
    public init(_ inputs: Int, _ outputs: Int, activation: Activation = .tanh, time: Int? = nil) throws(NetworkError) {
        let name = "Dense(\(inputs)→\(outputs)\(time == nil ? "" : ", per position"))"
        guard inputs >= 1, outputs >= 1 else {
            throw .invalidLayer(name, reason: "inputs and outputs must be at least 1")
        }
        let (weights, overflow) = inputs.multipliedReportingOverflow(by: outputs)
        guard !overflow, !weights.addingReportingOverflow(outputs).overflow else {
            throw .invalidLayer(name, reason: "\(inputs) × \(outputs) weights are more than can be counted")
        }
        if let time {
            guard time >= 1 else { throw .invalidLayer(name, reason: "time must be at least 1, got \(time)") }
            guard activation != .softmax else {
                throw .invalidLayer(
                    name, reason: "a softmax per position belongs to the sequenceCrossEntropy loss: give this layer the identity activation")
            }
            guard heldCount([time, max(inputs, outputs)]) != nil else {
                throw .invalidLayer(name, reason: "\(time) positions × \(max(inputs, outputs)) features per sample are more than can be held")
            }
        }
        self.inputs = inputs
        self.outputs = outputs
        self.activation = activation
        self.time = time
    }

    /// `Dense(784→256, tanh)`, or `Dense(64→27, identity, per position)`.
    public var description: String { "Dense(\(inputs)→\(outputs), \(activation)\(time == nil ? "" : ", per position"))" }
    /// Its outputs, each a neuron over the layer's inputs, at each position when per position.
    public var explainableUnits: ExplainableUnits { .units(count: outputs, positions: time) }

    public var inputShape: [Int] { time.map { [$0, inputs] } ?? [inputs] }
    public var outputShape: [Int] { time.map { [$0, outputs] } ?? [outputs] }

    public var parameterShapes: [(name: String, shape: [Int])] {
        [("weight", [inputs, outputs]), ("bias", [outputs])]
    }

    /// `nn.Linear` keeps its weight as `(outputs, inputs)`.
    public func pytorchOrder(of tensor: String) -> [Int]? { tensor == "weight" ? [1, 0] : nil }

    /// The weight: a product's matrix.
    public func isDecayed(_ tensor: String) -> Bool { tensor == "weight" }

    public func converted<Other: TensorScalar>(to: Other.Type) -> any Layer<Other> {
        try! Dense<Other>(inputs, outputs, activation: activation, time: time)  // sizes were checked when self was built
    }

    public var output: Tensor<Scalar> { cache.output }
    public var inputGradient: Tensor<Scalar> { cache.inputGradient }

    /// When set, the initial weights are drawn from `N(0, initialStandardDeviation²)` (GPT-2's
    /// rule, 0.02 and smaller for the products that end a residual branch) instead of
    /// Glorot's or He's.
    public var initialStandardDeviation: Double?

    /// Glorot/Xavier uniform, `U(±√(6 / (in + out)))`, for tanh, sigmoid, identity and softmax;
    /// He uniform, `U(±√(6 / in))`, for relu (its half-zero output halves the variance); or
    /// `N(0, σ²)` when ``initialStandardDeviation`` gives σ; zero biases.
    public func initialize(
        parameters: UnsafeMutableBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>,
        using generator: inout SeededGenerator
    ) {
        let fanIn = Double(inputs), fanOut = Double(outputs)
        let limit = activation == .relu ? (6 / fanIn).squareRoot() : (6 / (fanIn + fanOut)).squareRoot()
        let weights = inputs * outputs
        if let deviation = initialStandardDeviation {
            for i in 0..<weights { parameters[i] = Scalar(deviation * generator.normal()) }
        } else {
            for i in 0..<weights { parameters[i] = Scalar(generator.uniform(-limit, limit)) }
        }
        for i in weights..<weights + outputs { parameters[i] = 0 }
    }

    // MARK: Forward

    /// Runs the layer on a batch: `y = f(x·w + b)` (softmax: the logits, `x·w + b`), at every
    /// position of each sample when ``time`` is set.
    public mutating func forward(
        _ x: Tensor<Scalar>, parameters: UnsafeBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>,
        mode: LayerMode
    ) {
        // x: (batch, inputs)  w: (inputs, outputs)  b: (outputs)  y: (batch, outputs)
        // per position: x: (batch, time, inputs)  y: (batch, time, outputs)
        Kernels.denseForward(
            x, parameters: parameters, inputs: inputs, outputs: outputs, time: time, activation: activation, into: &cache.output)
    }

    /// Per position, each position's output is a function of its input alone.
    public var runsByPosition: Bool { time != nil }

    /// Position `position`'s row alone, per position: `y_t = f(x_t·w + b)`.
    public mutating func forward(
        position t: Int, _ x: Tensor<Scalar>, parameters: UnsafeBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>
    ) {
        // x: (1, time, inputs), its row t  w: (inputs, outputs)  b: (outputs)  y: (1, time, outputs), its row t
        Kernels.denseForward(
            position: t, x, parameters: parameters, inputs: inputs, outputs: outputs, activation: activation, into: &cache.output)
    }

    // MARK: Backward

    /// Adds `dw += xᵀ·dz` and `db += Σ dz` into `gradients`, with `dz = dy ⊙ f'(z)`, and `dx = dz·wᵀ`
    /// when asked; per position, the sums run over every position of every sample.
    public mutating func backward(
        input x: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>,
        parameters: UnsafeBufferPointer<Scalar>, gradients: UnsafeMutableBufferPointer<Scalar>,
        computeInputGradient: Bool
    ) {
        // x: (batch, inputs)  dy, dz: (batch, outputs)  dw: (inputs, outputs)  db: (outputs)  dx: (batch, inputs)
        // per position: x, dx: (batch, time, inputs)  dy: (batch, time, outputs)  dz: (batch·time, outputs)
        Kernels.denseBackward(
            input: x, output: cache.output, outputGradient: dy, parameters: parameters, gradients: gradients,
            inputs: inputs, outputs: outputs, activation: activation,
            preActivationGradient: &cache.preActivationGradient,
            computeInputGradient: computeInputGradient, inputGradient: &cache.inputGradient)
    }

    /// Backward with `step`'s update computed in the weight gradient's product,
    /// `w ← (1 - lr·λ)·w - lr·xᵀ·dz`, so the weight gradient is never stored; `dx = dz·wᵀ` first,
    /// from `w` as it was. When `step`'s weight decay covers part of a tensor only, the update
    /// follows the whole gradient instead (``Layer/backwardThenUpdate(input:outputGradient:parameters:gradients:updating:offset:computeInputGradient:)``).
    public mutating func backward(
        input x: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>,
        parameters: UnsafeMutableBufferPointer<Scalar>, gradients: UnsafeMutableBufferPointer<Scalar>,
        updating step: SGDStep, offset: Int, computeInputGradient: Bool
    ) {
        // x: (batch, inputs)  dy, dz: (batch, outputs)  w: (inputs, outputs)  b: (outputs)  dx: (batch, inputs)
        let fused = Kernels.denseBackwardUpdating(
            input: x, output: cache.output, outputGradient: dy, parameters: parameters, gradients: gradients,
            inputs: inputs, outputs: outputs, activation: activation, step: step, offset: offset,
            preActivationGradient: &cache.preActivationGradient,
            computeInputGradient: computeInputGradient, inputGradient: &cache.inputGradient)
        if !fused {
            backwardThenUpdate(
                input: x, outputGradient: dy, parameters: parameters, gradients: gradients, updating: step, offset: offset,
                computeInputGradient: computeInputGradient)
        }
    }
}

extension Naive {
    /// The definition of ``Dense``'s forward pass, one sample and one output at a time; the
    /// activation from its textbook definition (``Naive/activation(_:_:)``).
    ///
    ///     // x: (batch, inputs)  w: (inputs, outputs)  b: (outputs)  →  z, y: (batch, outputs)
    public static func denseForward<Scalar>(
        _ x: Tensor<Scalar>, weight w: Tensor<Scalar>, bias b: Tensor<Scalar>, activation: Activation
    ) -> (preActivation: Tensor<Scalar>, output: Tensor<Scalar>) {
        var z = Tensor<Scalar>(zeros: [x.rows, w.columns]), y = z
        for n in 0..<x.rows {
            for j in 0..<w.columns {
                var sum: Scalar = 0
                for i in 0..<w.rows { sum += x[n, i] * w[i, j] }
                z[n, j] = sum + b[j]
                y[n, j] = Naive.activation(activation, z[n, j])
            }
        }
        return (z, y)
    }

    /// The definition of ``Dense``'s backward pass from the pre-activation `z`:
    /// `dz = dy ⊙ f'(z)`, `dw = xᵀ·dz`, `db = Σ dz`, `dx = dz·wᵀ`.
    public static func denseBackward<Scalar>(
        _ x: Tensor<Scalar>, weight w: Tensor<Scalar>, preActivation z: Tensor<Scalar>,
        outputGradient dy: Tensor<Scalar>, activation: Activation
    ) -> (weight: Tensor<Scalar>, bias: Tensor<Scalar>, input: Tensor<Scalar>) {
        var dw = Tensor<Scalar>(zeros: w.shape), db = Tensor<Scalar>(zeros: [w.columns]), dx = Tensor<Scalar>(zeros: x.shape)
        for n in 0..<x.rows {
            for j in 0..<w.columns {
                let dz = dy[n, j] * activationDerivative(activation, z[n, j])
                db[j] += dz
                for i in 0..<w.rows {
                    dw[i, j] += x[n, i] * dz
                    dx[n, i] += dz * w[i, j]
                }
            }
        }
        return (dw, db, dx)
    }
}
