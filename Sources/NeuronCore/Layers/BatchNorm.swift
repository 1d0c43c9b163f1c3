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
    @_specialize(where Scalar == Float)  // reached through `any Layer`: as Dense, a concrete copy spares each
    @_specialize(where Scalar == Double)  // step the generic metadata lookups (15% of a CNN step in perf)
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
                                Scalar.batchNormTraining(
                                    px, gamma: gamma, beta: beta, epsilon: epsilon, momentum: momentum,
                                    runningMean: runningMean, runningVariance: runningVariance,
                                    mean: pm, inverseDeviation: ps, normalized: pn, into: py)
                            }
                        }
                    }
                case .evaluation:
                    Scalar.batchNormEvaluation(
                        px, gamma: gamma, beta: beta, runningMean: UnsafeBufferPointer(runningMean),
                        runningVariance: UnsafeBufferPointer(runningVariance), epsilon: epsilon, into: py)
                }
                Scalar.activate(activation, py)
            }
        }
    }

    // MARK: Backward

    /// Adds `dγ += Σ dz·x̂` and `dβ += Σ dz` with `dz = dy ⊙ f'(z)`, and `dx` (through the batch's
    /// mean and variance) when asked; after a training forward pass.
    @_specialize(where Scalar == Float)  // reached through `any Layer`: as Dense, a concrete copy spares each
    @_specialize(where Scalar == Double)  // step the generic metadata lookups (15% of a CNN step in perf)
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
                    Scalar.activationBackward(activation, output: py, gradient: pdy, into: pdz)
                }
            }
        }
        if computeInputGradient { cache.inputGradient.resize(rows: batch, columns: x.count / batch) }
        cache.preActivationGradient.withUnsafeBufferPointer { pdz in
            cache.normalized.withUnsafeBufferPointer { pn in
                cache.inverseDeviation.withUnsafeBufferPointer { ps in
                    cache.sums.withUnsafeMutableBufferPointer { sums in
                        cache.inputGradient.withUnsafeMutableBufferPointer { pdx in
                            Scalar.batchNormBackward(
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

// The kernels walk the rows through pointers, without overflow checks: each row's loop over the
// channels then vectorizes (with buffer subscripts and checked `r + j` it ran an element at a
// time, 5× slower in a micro-benchmark). Every sum still runs down the rows in order.
extension TensorScalar {
    @_specialize(where Self == Float)
    @_specialize(where Self == Double)
    public static func batchNormTraining(
        _ x: UnsafeBufferPointer<Self>, gamma: UnsafeBufferPointer<Self>, beta: UnsafeBufferPointer<Self>,
        epsilon: Double, momentum: Double,
        runningMean: UnsafeMutableBufferPointer<Self>, runningVariance: UnsafeMutableBufferPointer<Self>,
        mean: UnsafeMutableBufferPointer<Self>, inverseDeviation s: UnsafeMutableBufferPointer<Self>,
        normalized xHat: UnsafeMutableBufferPointer<Self>, into y: UnsafeMutableBufferPointer<Self>
    ) {
        // x, x̂, y: (rows, channels), row after row; the column statistics accumulate across them
        let c = gamma.count, rows = x.count / c
        Tensor<Self>.zero(mean)
        Tensor<Self>.zero(s)  // holds Σ (x - mean)² until the end
        guard rows > 0, let xs = x.baseAddress, let hs = xHat.baseAddress, let ys = y.baseAddress,
            let ms = mean.baseAddress, let ss = s.baseAddress, let gs = gamma.baseAddress, let bs = beta.baseAddress
        else { return }
        for r in stride(from: 0, to: x.count, by: c) {
            let xr = xs + r
            for j in 0..<c { ms[j] += xr[j] }
        }
        for j in 0..<c { ms[j] /= Self(rows) }
        for r in stride(from: 0, to: x.count, by: c) {
            let xr = xs + r, hr = hs + r
            for j in 0..<c {
                let d = xr[j] - ms[j]
                hr[j] = d
                ss[j] += d * d
            }
        }
        let m = Self(momentum), unbiased = rows > 1 ? Self(rows) / Self(rows - 1) : 1
        for j in 0..<c {
            let variance = ss[j] / Self(rows)
            runningMean[j] = (1 - m) * runningMean[j] + m * ms[j]
            runningVariance[j] = (1 - m) * runningVariance[j] + m * variance * unbiased
            ss[j] = 1 / (variance + Self(epsilon)).squareRoot()
        }
        for r in stride(from: 0, to: x.count, by: c) {
            let hr = hs + r, yr = ys + r
            for j in 0..<c {
                hr[j] *= ss[j]
                yr[j] = gs[j] * hr[j] + bs[j]
            }
        }
    }

    @_specialize(where Self == Float)
    @_specialize(where Self == Double)
    public static func batchNormEvaluation(
        _ x: UnsafeBufferPointer<Self>, gamma: UnsafeBufferPointer<Self>, beta: UnsafeBufferPointer<Self>,
        runningMean: UnsafeBufferPointer<Self>, runningVariance: UnsafeBufferPointer<Self>, epsilon: Double,
        into y: UnsafeMutableBufferPointer<Self>
    ) {
        // x, y: (rows, channels)
        let c = gamma.count
        guard c > 0, let xs = x.baseAddress, let ys = y.baseAddress, let gs = gamma.baseAddress, let bs = beta.baseAddress,
            let ms = runningMean.baseAddress, let vs = runningVariance.baseAddress
        else { return }
        for r in stride(from: 0, to: x.count, by: c) {
            let xr = xs + r, yr = ys + r
            for j in 0..<c {
                yr[j] = gs[j] * (xr[j] - ms[j]) / (vs[j] + Self(epsilon)).squareRoot() + bs[j]
            }
        }
    }

    @_specialize(where Self == Float)
    @_specialize(where Self == Double)
    public static func batchNormBackward(
        _ dy: UnsafeBufferPointer<Self>, normalized xHat: UnsafeBufferPointer<Self>,
        gamma: UnsafeBufferPointer<Self>, inverseDeviation s: UnsafeBufferPointer<Self>, sums: UnsafeMutableBufferPointer<Self>,
        gammaGradient: UnsafeMutableBufferPointer<Self>, betaGradient: UnsafeMutableBufferPointer<Self>,
        into dx: UnsafeMutableBufferPointer<Self>?
    ) {
        // dy, x̂, dx: (rows, channels)  sums: (Σ dy, Σ dy·x̂) per channel
        let c = gamma.count, rows = Self(dy.count / c)
        Tensor<Self>.zero(sums)
        guard c > 0, let dys = dy.baseAddress, let hs = xHat.baseAddress, let sd = sums.baseAddress else { return }
        let sdh = sd + c
        for r in stride(from: 0, to: dy.count, by: c) {
            let dyr = dys + r, hr = hs + r
            for j in 0..<c {
                sd[j] += dyr[j]
                sdh[j] += dyr[j] * hr[j]
            }
        }
        for j in 0..<c {
            betaGradient[j] += sd[j]
            gammaGradient[j] += sdh[j]
        }
        guard let dxs = dx?.baseAddress, let gs = gamma.baseAddress, let ss = s.baseAddress else { return }
        for r in stride(from: 0, to: dy.count, by: c) {
            let dyr = dys + r, hr = hs + r, dxr = dxs + r
            for j in 0..<c {
                dxr[j] = gs[j] * ss[j] / rows * (rows * dyr[j] - sd[j] - hr[j] * sdh[j])
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
