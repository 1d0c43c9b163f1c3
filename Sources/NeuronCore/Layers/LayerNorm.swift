// Layer normalization (Ba, Kiros & Hinton 2016; the transformer's): each sample's features, or
// each position's in a sequence, normalized to zero mean and unit variance over those features
// alone, then scaled and shifted by a learned weight and bias. Unlike batch normalization, nothing
// is shared across the batch: training and evaluation compute the same thing, and there is no
// running state. Every position of every sample is a row of a `(rows, features)` matrix; each
// pass is one kernel call (`Kernels/NormalizationKernels.swift`).

/// Layer normalization over the last dimension, `y = (x - mean)/√(var + ε) ⊙ weight + bias` with
/// each row's mean and biased variance, e.g. `LayerNorm(64)` or `LayerNorm(8×64)`: PyTorch's
/// `nn.LayerNorm(features)`.
///
/// Its parameter slice holds `weight` (ones at first) then `bias` (zeros), each `(features)`:
/// nn.LayerNorm's names, layouts and starting values.
public struct LayerNorm<Scalar: TensorScalar>: Layer {
    public let inputShape: [Int]
    /// Added to the variance before its square root (PyTorch's default 1e-5).
    public let epsilon: Double

    /// What forward keeps for backward, and backward's own buffer; sized when a batch shape is
    /// first seen, then reused.
    public struct Cache: Sendable {
        /// `y`, like the input.
        public var output = Tensor<Scalar>(zeros: [0, 0])
        /// Each row's mean, `(rows)`: backward recomputes `x̂` from it, the input and ``inverseDeviation``.
        public var mean = Tensor<Scalar>(zeros: [0])
        /// Each row's `s = 1/√(var + ε)`, `(rows)`.
        public var inverseDeviation = Tensor<Scalar>(zeros: [0])
        /// `dx`, like the input, only when asked for.
        public var inputGradient = Tensor<Scalar>(zeros: [0, 0])
    }

    /// The layer's caches.
    public private(set) var cache = Cache()

    /// Layer normalization of samples of shape `shape` over its last dimension.
    /// - Parameters:
    ///   - shape: `[features]`, or `[time, features]` to normalize each position of a sequence.
    ///   - epsilon: added to the variance (PyTorch's default 1e-5).
    /// - Throws: ``NetworkError/invalidLayer(_:reason:)`` for another rank, a non-positive shape or
    ///   `ε ≤ 0`.
    public init(shape: [Int], epsilon: Double = 1e-5) throws(NetworkError) {
        let name = "LayerNorm(\(imageDescription(shape)))"
        try checkRowNormalization(name, shape: shape, epsilon: epsilon)
        inputShape = shape
        self.epsilon = epsilon
    }

    /// The normalized dimension's extent.
    public var features: Int { inputShape[inputShape.count - 1] }

    /// `LayerNorm(64)`, or `LayerNorm(8×64)` over a sequence: time × features.
    public var description: String { "LayerNorm(\(imageDescription(inputShape)))" }

    public var outputShape: [Int] { inputShape }
    /// Each row's mean and `1/σ`, a row per position (one for a vector), kept for backward.
    public var cacheCount: Int { inputShape.dropLast().reduce(1, *).times(2) }
    public var parameterShapes: [(name: String, shape: [Int])] { [("weight", [features]), ("bias", [features])] }

    public func converted<Other: TensorScalar>(to: Other.Type) -> any Layer<Other> {
        try! LayerNorm<Other>(shape: inputShape, epsilon: epsilon)  // checked when self was built
    }

    public var output: Tensor<Scalar> { cache.output }
    public var inputGradient: Tensor<Scalar> { cache.inputGradient }

    /// `weight = 1`, `bias = 0` (PyTorch's): the layer starts as the plain normalization.
    public func initialize(
        parameters: UnsafeMutableBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>,
        using generator: inout SeededGenerator
    ) {
        let f = features
        for i in 0..<f {
            parameters[i] = 1
            parameters[f + i] = 0
        }
    }

    // MARK: Forward

    /// Normalizes each row (each sample, or each position of each sample) over its features, the
    /// same in training and evaluation, keeping each row's mean and `s` for backward.
    public mutating func forward(
        _ x: Tensor<Scalar>, parameters: UnsafeBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>,
        mode: LayerMode
    ) {
        // x, y: (rows, features) with rows = batch (· time)  weight, bias: (features)  mean, s: (rows)
        let f = features, rows = x.count / f, epsilon = epsilon
        cache.output.resize(to: x.shape)
        // (1, rows): resizing to a matrix shape allocates nothing once it is that shape ([rows] would, each step)
        cache.mean.resize(rows: 1, columns: rows)
        cache.inverseDeviation.resize(rows: 1, columns: rows)
        x.withUnsafeBufferPointer { x in
            cache.mean.withUnsafeMutableBufferPointer { mean in
                cache.inverseDeviation.withUnsafeMutableBufferPointer { s in
                    cache.output.withUnsafeMutableBufferPointer { y in
                        Kernels.layerNormForward(
                            x, weight: UnsafeBufferPointer(rebasing: parameters[0..<f]), bias: UnsafeBufferPointer(rebasing: parameters[f..<2 * f]),
                            epsilon: epsilon, mean: mean, inverseDeviation: s, into: y)
                    }
                }
            }
        }
    }

    /// Over a sequence, each position is normalized over its own features.
    public var runsByPosition: Bool { inputShape.count == 2 }

    /// Normalizes position `position`'s row alone, keeping its mean and `s`.
    public mutating func forward(
        position t: Int, _ x: Tensor<Scalar>, parameters: UnsafeBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>
    ) {
        // x, y: (1, time, features), their row t  weight, bias: (features)  mean, s: (time), their entry t
        let f = features, row = t * f..<(t + 1) * f, epsilon = epsilon
        x.withUnsafeBufferPointer { x in
            cache.mean.withUnsafeMutableBufferPointer { mean in
                cache.inverseDeviation.withUnsafeMutableBufferPointer { s in
                    cache.output.withUnsafeMutableBufferPointer { y in
                        Kernels.layerNormForward(
                            UnsafeBufferPointer(rebasing: x[row]), weight: UnsafeBufferPointer(rebasing: parameters[0..<f]),
                            bias: UnsafeBufferPointer(rebasing: parameters[f..<2 * f]), epsilon: epsilon,
                            mean: UnsafeMutableBufferPointer(rebasing: mean[t..<t + 1]),
                            inverseDeviation: UnsafeMutableBufferPointer(rebasing: s[t..<t + 1]),
                            into: UnsafeMutableBufferPointer(rebasing: y[row]))
                    }
                }
            }
        }
    }

    // MARK: Backward

    /// Adds `dweight += Σ dy ⊙ x̂` and `dbias += Σ dy` over every row, and `dx` (through each row's
    /// mean and variance) when asked.
    public mutating func backward(
        input x: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>,
        parameters: UnsafeBufferPointer<Scalar>, gradients: UnsafeMutableBufferPointer<Scalar>,
        computeInputGradient: Bool
    ) {
        // x, dy, dx: (rows, features)  weight, dweight, dbias: (features)  mean, s: (rows)
        let f = features
        if computeInputGradient { cache.inputGradient.resize(to: x.shape) }
        x.withUnsafeBufferPointer { x in
            dy.withUnsafeBufferPointer { dy in
                cache.mean.withUnsafeBufferPointer { mean in
                    cache.inverseDeviation.withUnsafeBufferPointer { s in
                        cache.inputGradient.withUnsafeMutableBufferPointer { dx in
                            Kernels.layerNormBackward(
                                x, outputGradient: dy, weight: UnsafeBufferPointer(rebasing: parameters[0..<f]), mean: mean, inverseDeviation: s,
                                weightGradient: UnsafeMutableBufferPointer(rebasing: gradients[0..<f]),
                                biasGradient: UnsafeMutableBufferPointer(rebasing: gradients[f..<2 * f]),
                                into: computeInputGradient ? dx : nil)
                        }
                    }
                }
            }
        }
    }
}

extension Naive {
    /// The definition of ``LayerNorm``'s forward pass, one row at a time in Double: the row's mean
    /// and biased variance (divided by the features, as PyTorch's), then
    /// `y = (x - mean)/√(var + ε)·weight + bias`.
    ///
    ///     // x: (rows, features)  weight, bias: (features)  →  y: (rows, features)
    public static func layerNormForward<Scalar>(
        _ x: Tensor<Scalar>, weight: Tensor<Scalar>, bias: Tensor<Scalar>, epsilon: Double
    ) -> Tensor<Scalar> {
        let f = weight.count
        var y = Tensor<Scalar>(zeros: x.shape)
        for r in 0..<x.count / f {
            let row = (0..<f).map { Double(x[r * f + $0]) }
            let mean = row.reduce(0, +) / Double(f)
            let variance = row.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(f)
            for i in 0..<f {
                y[r * f + i] = Scalar((row[i] - mean) / (variance + epsilon).squareRoot() * Double(weight[i]) + Double(bias[i]))
            }
        }
        return y
    }

    /// The definition of ``LayerNorm``'s backward pass by the chain rule through each row's whole
    /// Jacobian, one pair of features at a time in Double: with `x̂ᵢ = (xᵢ - mean)·s`,
    /// `∂x̂ᵢ/∂xₖ = s·(δᵢₖ - 1/n - x̂ᵢ·x̂ₖ/n)` over the row's `n` features (the `1/n` through the
    /// mean, the `x̂ᵢ·x̂ₖ/n` through the variance); `dweight = Σ dy·x̂`, `dbias = Σ dy` over the rows.
    ///
    ///     // x, dy: (rows, features)  weight: (features)  →  dweight, dbias: (features), dx: (rows, features)
    public static func layerNormBackward<Scalar>(
        _ x: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>, weight: Tensor<Scalar>, epsilon: Double
    ) -> (weight: Tensor<Scalar>, bias: Tensor<Scalar>, input: Tensor<Scalar>) {
        let f = weight.count, n = Double(f)
        var dWeight = Tensor<Scalar>(zeros: [f]), dBias = Tensor<Scalar>(zeros: [f]), dx = Tensor<Scalar>(zeros: x.shape)
        for r in 0..<x.count / f {
            let row = (0..<f).map { Double(x[r * f + $0]) }
            let mean = row.reduce(0, +) / n
            let variance = row.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / n
            let s = 1 / (variance + epsilon).squareRoot()
            let xHat = row.map { ($0 - mean) * s }
            let g = (0..<f).map { Double(dy[r * f + $0]) }
            for i in 0..<f {
                dWeight[i] += Scalar(g[i] * xHat[i])
                dBias[i] += Scalar(g[i])
            }
            for k in 0..<f {
                var sum = 0.0
                for i in 0..<f {
                    let jacobian = s * ((i == k ? 1 : 0) - 1 / n - xHat[i] * xHat[k] / n)
                    sum += g[i] * Double(weight[i]) * jacobian
                }
                dx[r * f + k] = Scalar(sum)
            }
        }
        return (dWeight, dBias, dx)
    }
}

/// The rules every normalization over each row's last dimension shares (``LayerNorm``,
/// ``RMSNorm``): samples of `[features]` or `[time, features]` that can be counted, and an
/// `epsilon` above 0 and finite.
/// - Throws: ``NetworkError/invalidLayer(_:reason:)`` naming the layer `name`.
func checkRowNormalization(_ name: String, shape: [Int], epsilon: Double) throws(NetworkError) {
    guard shape.count == 1 || shape.count == 2, heldCount(shape) != nil else {
        throw .invalidLayer(name, reason: "takes (features) vectors or (time, features) sequences, got \(TensorError.format(shape))")
    }
    guard epsilon > 0, epsilon.isFinite else { throw .invalidLayer(name, reason: "epsilon must be above 0, got \(epsilon)") }
}
