// Batch normalization: each channel (of an image) or feature (of a vector) normalized to zero
// mean and unit variance over the batch, then scaled and shifted by trained γ and β. Training
// uses the batch's statistics and moves the running ones towards them; evaluation uses the running
// ones. Channels last makes both cases one: a `(rows, channels)` matrix whose columns are
// normalized, with rows = batch · pixels for an image and rows = batch for a vector.

/// Batch normalization `y = f(γ·(x - mean) / √(var + ε) + β)` over the last dimension, e.g.
/// `BatchNorm(26×26×32)` or `BatchNorm(128, relu)`.
///
/// Its parameter slice holds `γ` (`weight`, ones at first) then `β` (`bias`, zeros); its state
/// slice `running_mean` (zeros) then `running_var` (ones): PyTorch's names and starting values.
public struct BatchNorm<Scalar: TensorScalar>: ActivatedLayer {
    public let inputShape: [Int]
    /// How far the running statistics move towards each batch's (PyTorch's default 0.1).
    public let momentum: Double
    /// Added to the variance before its square root (PyTorch's default 1e-5).
    public let epsilon: Double
    /// The non-linearity after the affine step (identity unless asked).
    public let activation: Activation

    /// What forward keeps for backward, and backward's own buffers; sized when a batch shape is
    /// first seen, then reused.
    public struct Cache: Sendable {
        /// `y`: `(batch, inputShape…)`.
        public var output = Tensor<Scalar>(zeros: [0, 0])
        /// `x̂ = (x - mean) · s`, `(rows, channels)`.
        public var normalized = Tensor<Scalar>(zeros: [0, 0])
        /// The last training batch's mean per channel.
        public var mean = Tensor<Scalar>(zeros: [0])
        /// The last training batch's `s = 1 / √(var + ε)` per channel.
        public var inverseDeviation = Tensor<Scalar>(zeros: [0])
        /// `Σ dz` and `Σ dz·x̂` per channel, backward's scratch.
        public var sums = Tensor<Scalar>(zeros: [0])
        /// `dz = dy ⊙ f'(z)`.
        public var preActivationGradient = Tensor<Scalar>(zeros: [0, 0])
        /// `dx`, like the input, only when asked for.
        public var inputGradient = Tensor<Scalar>(zeros: [0, 0])
    }

    /// The layer's caches.
    public private(set) var cache = Cache()

    /// Batch normalization over the last dimension of samples of shape `input`: the channels of
    /// a `(height, width, channels)` image, the features of a `(features)` vector.
    /// - Throws: ``NetworkError/invalidLayer(_:reason:)`` for another rank, a non-positive shape,
    ///   momentum outside `[0, 1]` or `ε ≤ 0`.
    public init(input: [Int], momentum: Double = 0.1, epsilon: Double = 1e-5, activation: Activation = .identity) throws(NetworkError) {
        let name = "BatchNorm(\(imageDescription(input)))"
        guard input.count == 1 || input.count == 3, heldCount(input) != nil else {
            throw .invalidLayer(name, reason: "takes (features) vectors or (height, width, channels) images, got \(TensorError.format(input))")
        }
        guard momentum >= 0, momentum <= 1 else { throw .invalidLayer(name, reason: "momentum must be between 0 and 1, got \(momentum)") }
        guard epsilon > 0, epsilon.isFinite else { throw .invalidLayer(name, reason: "epsilon must be above 0, got \(epsilon)") }
        inputShape = input
        self.momentum = momentum
        self.epsilon = epsilon
        self.activation = activation
    }

    /// The normalized dimension's extent.
    public var channels: Int { inputShape[inputShape.count - 1] }

    public var description: String {
        "BatchNorm(\(imageDescription(inputShape))" + (activation == .identity ? ")" : ", \(activation))")
    }

    public var outputShape: [Int] { inputShape }
    public var parameterShapes: [(name: String, shape: [Int])] { [("weight", [channels]), ("bias", [channels])] }
    public var stateShapes: [(name: String, shape: [Int])] { [("running_mean", [channels]), ("running_var", [channels])] }

    /// Evaluation's per-channel affine map, `y = f(w·x + b)` with `w = γ / √(var + ε)` and
    /// `b = β - mean·w`, as a layer that trains as it evaluates: a dense layer (vectors) or a 1×1
    /// convolution (images) whose weight is the diagonal `w`.
    public func evaluationForm(
        parameters: UnsafeBufferPointer<Scalar>, state: UnsafeBufferPointer<Scalar>
    ) throws(NetworkError) -> (layer: any Layer<Scalar>, parameters: [Scalar])? {
        let c = channels
        // parameters: weight γ (c), bias β (c); state: running mean (c), running variance (c)
        let w = (0..<c).map { parameters[$0] / (state[c + $0] + Scalar(epsilon)).squareRoot() }
        let b = (0..<c).map { parameters[c + $0] - state[$0] * w[$0] }
        let layer: any Layer<Scalar>
        switch inputShape.count {
        case 1: layer = try Dense<Scalar>(c, c, activation: activation)
        case 3: layer = try Conv2D<Scalar>(input: inputShape, filters: c, kernel: (1, 1), activation: activation)
        default: throw .invalidLayer("\(self)", reason: "only a batch norm over vectors or images can be explained in evaluation mode")
        }
        // Dense (c, c) and 1×1 convolution (1, 1, c, c) weights alike: element (j, j) is j·c + j; the bias after.
        var values = [Scalar](repeating: 0, count: c * c)
        for j in 0..<c { values[j * c + j] = w[j] }
        return (layer, values + b)
    }

    public func converted<Other: TensorScalar>(to: Other.Type) -> any Layer<Other> {
        try! BatchNorm<Other>(input: inputShape, momentum: momentum, epsilon: epsilon, activation: activation)
    }

    public var output: Tensor<Scalar> { cache.output }
    public var inputGradient: Tensor<Scalar> { cache.inputGradient }

    /// `γ = 1`, `β = 0`, running mean 0 and variance 1 (PyTorch's); nothing random.
    public func initialize(
        parameters: UnsafeMutableBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>,
        using generator: inout SeededGenerator
    ) {
        let c = channels
        for i in 0..<c {
            parameters[i] = 1
            parameters[c + i] = 0
            state[i] = 0
            state[c + i] = 1
        }
    }

    // MARK: Forward

    /// Training: normalizes with the batch's statistics and updates the running ones in `state`;
    /// evaluation: normalizes with the running ones.
    public mutating func forward(
        _ x: Tensor<Scalar>, parameters: UnsafeBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>,
        mode: LayerMode
    ) {
        // x, x̂, y: (rows, channels)  γ, β, mean, s, running mean, running variance: (channels)
        let batch = x.shape[0], c = channels, rows = x.count / c, momentum = momentum, epsilon = epsilon
        let gamma = UnsafeBufferPointer(rebasing: parameters[0..<c]), beta = UnsafeBufferPointer(rebasing: parameters[c..<2 * c])
        let runningMean = UnsafeMutableBufferPointer(rebasing: state[0..<c])
        let runningVariance = UnsafeMutableBufferPointer(rebasing: state[c..<2 * c])
        cache.output.resize(rows: batch, columns: x.count / batch)
        x.withUnsafeBufferPointer { px in
            cache.output.withUnsafeMutableBufferPointer { py in
                switch mode {
                case .training:
                    cache.normalized.resize(rows: rows, columns: c)
                    cache.mean.resize(rows: 1, columns: c)
                    cache.inverseDeviation.resize(rows: 1, columns: c)
                    cache.mean.withUnsafeMutableBufferPointer { pm in
                        cache.inverseDeviation.withUnsafeMutableBufferPointer { ps in
                            cache.normalized.withUnsafeMutableBufferPointer { pn in
                                Kernels.batchNormTraining(
                                    px, gamma: gamma, beta: beta, epsilon: epsilon, momentum: momentum,
                                    runningMean: runningMean, runningVariance: runningVariance,
                                    mean: pm, inverseDeviation: ps, normalized: pn, into: py)
                            }
                        }
                    }
                case .evaluation:
                    Kernels.batchNormEvaluation(
                        px, gamma: gamma, beta: beta, runningMean: UnsafeBufferPointer(runningMean),
                        runningVariance: UnsafeBufferPointer(runningVariance), epsilon: epsilon, into: py)
                }
                Kernels.activate(activation, py)
            }
        }
    }

    // MARK: Backward

    /// Adds `dγ += Σ dz·x̂` and `dβ += Σ dz` with `dz = dy ⊙ f'(z)`, and `dx` (through the batch's
    /// mean and variance) when asked; after a training forward pass.
    public mutating func backward(
        input x: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>,
        parameters: UnsafeBufferPointer<Scalar>, gradients: UnsafeMutableBufferPointer<Scalar>,
        computeInputGradient: Bool
    ) {
        // dy, dz, x̂, dx: (rows, channels)  γ, s, dγ, dβ: (channels)
        let batch = x.shape[0], c = channels, rows = x.count / c, activation = activation
        cache.preActivationGradient.resize(rows: rows, columns: c)
        cache.sums.resize(rows: 2, columns: c)
        cache.output.withUnsafeBufferPointer { py in
            dy.withUnsafeBufferPointer { pdy in
                cache.preActivationGradient.withUnsafeMutableBufferPointer { pdz in
                    Kernels.activationBackward(activation, output: py, gradient: pdy, into: pdz)
                }
            }
        }
        if computeInputGradient { cache.inputGradient.resize(rows: batch, columns: x.count / batch) }
        cache.preActivationGradient.withUnsafeBufferPointer { pdz in
            cache.normalized.withUnsafeBufferPointer { pn in
                cache.inverseDeviation.withUnsafeBufferPointer { ps in
                    cache.sums.withUnsafeMutableBufferPointer { sums in
                        cache.inputGradient.withUnsafeMutableBufferPointer { pdx in
                            Kernels.batchNormBackward(
                                pdz, normalized: pn, gamma: UnsafeBufferPointer(rebasing: parameters[0..<c]), inverseDeviation: ps,
                                sums: sums, gammaGradient: UnsafeMutableBufferPointer(rebasing: gradients[0..<c]),
                                betaGradient: UnsafeMutableBufferPointer(rebasing: gradients[c..<2 * c]),
                                into: computeInputGradient ? pdx : nil)
                        }
                    }
                }
            }
        }
    }
}

extension Naive {
    /// The definition of ``BatchNorm`` in training, one column at a time: the column's mean and
    /// biased variance, then `y = f(γ·(x - mean)/√(var + ε) + β)`; and its backward by the chain rule
    /// through the whole Jacobian, `∂x̂ᵢ/∂xₖ = s·(δᵢₖ - 1/m - x̂ᵢ·x̂ₖ/m)`, one pair of rows at a time.
    ///
    ///     // x, dy: (rows, channels)  γ, β: (channels)  →  y, dx: (rows, channels), dγ, dβ: (channels)
    public static func batchNormTraining<Scalar>(
        _ x: Tensor<Scalar>, gamma: Tensor<Scalar>, beta: Tensor<Scalar>, epsilon: Double, activation: Activation,
        outputGradient dy: Tensor<Scalar>?
    ) -> (output: Tensor<Scalar>, gamma: Tensor<Scalar>, beta: Tensor<Scalar>, input: Tensor<Scalar>) {
        let c = gamma.count, m = x.count / c
        var y = Tensor<Scalar>(zeros: x.shape), dx = Tensor<Scalar>(zeros: x.shape)
        var dGamma = Tensor<Scalar>(zeros: [c]), dBeta = Tensor<Scalar>(zeros: [c])
        for j in 0..<c {
            let column = (0..<m).map { Double(x[$0 * c + j]) }
            let mean = column.reduce(0, +) / Double(m)
            let variance = column.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(m)
            let s = 1 / (variance + epsilon).squareRoot()
            let xHat = column.map { ($0 - mean) * s }
            let z = xHat.map { Double(gamma[j]) * $0 + Double(beta[j]) }
            for i in 0..<m { y[i * c + j] = Scalar(Naive.activation(activation, z[i])) }
            guard let dy else { continue }
            let dz = (0..<m).map { Double(dy[$0 * c + j]) * Naive.activationDerivative(activation, z[$0]) }
            for i in 0..<m {
                dBeta[j] += Scalar(dz[i])
                dGamma[j] += Scalar(dz[i] * xHat[i])
            }
            for k in 0..<m {
                var sum = 0.0
                for i in 0..<m {
                    let jacobian = s * ((i == k ? 1 : 0) - 1 / Double(m) - xHat[i] * xHat[k] / Double(m))
                    sum += dz[i] * Double(gamma[j]) * jacobian
                }
                dx[k * c + j] = Scalar(sum)
            }
        }
        return (y, dGamma, dBeta, dx)
    }
}
