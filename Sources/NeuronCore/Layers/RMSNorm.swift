// Root-mean-square normalization (Zhang & Sennrich 2019; LLaMA's): each sample's features, or each
// position's in a sequence, divided by their root mean square over those features alone, then
// scaled by a learned weight. It is ``LayerNorm`` without the mean and the bias: no centring, so a
// row keeps its direction and only its length is normalized. Nothing is shared across the batch:
// training and evaluation compute the same thing, and there is no running state. Every position of
// every sample is a row of a `(rows, features)` matrix; each pass is one kernel call
// (`Kernels/NormalizationKernels.swift`).

/// RMS normalization over the last dimension, `y = x/√(mean(x²) + ε) ⊙ weight` with each row's
/// mean square, e.g. `RMSNorm(64)` or `RMSNorm(8×64)`: PyTorch's
/// `nn.RMSNorm(features, eps=ε)`.
///
/// Its parameter slice holds `weight`, `(features)`, ones at first: nn.RMSNorm's name, layout and
/// starting value. There is no bias.
public struct RMSNorm<Scalar: TensorScalar>: Layer {
    public let inputShape: [Int]
    /// Added to the mean square before its square root (1e-5 here; PyTorch's `eps=None` takes
    /// the scalar type's machine epsilon instead, so a comparison passes `eps` explicitly).
    public let epsilon: Double

    /// What forward keeps for backward, and backward's own buffer; sized when a batch shape is
    /// first seen, then reused.
    public struct Cache: Sendable {
        /// `y`, like the input.
        public var output = Tensor<Scalar>(zeros: [0, 0])
        /// Each row's `r = 1/√(mean(x²) + ε)`, `(rows)`: backward recomputes `x̂ = x·r` from it
        /// and the input.
        public var inverseRMS = Tensor<Scalar>(zeros: [0])
        /// `dx`, like the input, only when asked for.
        public var inputGradient = Tensor<Scalar>(zeros: [0, 0])
    }

    /// The layer's caches.
    public private(set) var cache = Cache()

    /// RMS normalization of samples of shape `shape` over its last dimension.
    /// - Parameters:
    ///   - shape: `[features]`, or `[time, features]` to normalize each position of a sequence.
    ///   - epsilon: added to the mean square (1e-5, as ``LayerNorm``'s).
    /// - Throws: ``NetworkError/invalidLayer(_:reason:)`` for another rank, a non-positive shape or
    ///   `ε ≤ 0`.
    public init(shape: [Int], epsilon: Double = 1e-5) throws(NetworkError) {
        let name = "RMSNorm(\(imageDescription(shape)))"
        try checkRowNormalization(name, shape: shape, epsilon: epsilon)
        inputShape = shape
        self.epsilon = epsilon
    }

    /// The normalized dimension's extent.
    public var features: Int { inputShape[inputShape.count - 1] }

    /// `RMSNorm(64)`, or `RMSNorm(8×64)` over a sequence: time × features.
    public var description: String { "RMSNorm(\(imageDescription(inputShape)))" }

    public var outputShape: [Int] { inputShape }
    public var parameterShapes: [(name: String, shape: [Int])] { [("weight", [features])] }
    /// One `r` per row: 1 for a vector, `time` for a sequence.
    public var cacheCount: Int { inputShape.dropLast().reduce(1, *) }

    public func converted<Other: TensorScalar>(to: Other.Type) -> any Layer<Other> {
        try! RMSNorm<Other>(shape: inputShape, epsilon: epsilon)  // checked when self was built
    }

    public var output: Tensor<Scalar> { cache.output }
    public var inputGradient: Tensor<Scalar> { cache.inputGradient }

    /// `weight = 1` (PyTorch's): the layer starts as the plain normalization.
    public func initialize(
        parameters: UnsafeMutableBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>,
        using generator: inout SeededGenerator
    ) {
        for i in 0..<features { parameters[i] = 1 }
    }

    // MARK: Forward

    /// Normalizes each row (each sample, or each position of each sample) by its root mean square,
    /// the same in training and evaluation, keeping each row's `r` for backward.
    public mutating func forward(
        _ x: Tensor<Scalar>, parameters: UnsafeBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>,
        mode: LayerMode
    ) {
        // x, y: (rows, features) with rows = batch (· time)  weight: (features)  r: (rows)
        let f = features, rows = x.count / f, epsilon = epsilon
        cache.output.resize(to: x.shape)
        // (1, rows): resizing to a matrix shape allocates nothing once it is that shape ([rows] would, each step)
        cache.inverseRMS.resize(rows: 1, columns: rows)
        x.withUnsafeBufferPointer { x in
            cache.inverseRMS.withUnsafeMutableBufferPointer { r in
                cache.output.withUnsafeMutableBufferPointer { y in
                    Kernels.rmsNormForward(x, weight: UnsafeBufferPointer(rebasing: parameters[0..<f]), epsilon: epsilon, inverseRMS: r, into: y)
                }
            }
        }
    }

    /// Over a sequence, each position is normalized over its own features.
    public var runsByPosition: Bool { inputShape.count == 2 }

    /// Normalizes position `position`'s row alone, keeping its `r`.
    public mutating func forward(
        position t: Int, _ x: Tensor<Scalar>, parameters: UnsafeBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>
    ) {
        // x, y: (1, time, features), their row t  weight: (features)  r: (time), its entry t
        let f = features, row = t * f..<(t + 1) * f, epsilon = epsilon
        x.withUnsafeBufferPointer { x in
            cache.inverseRMS.withUnsafeMutableBufferPointer { r in
                cache.output.withUnsafeMutableBufferPointer { y in
                    Kernels.rmsNormForward(
                        UnsafeBufferPointer(rebasing: x[row]), weight: UnsafeBufferPointer(rebasing: parameters[0..<f]), epsilon: epsilon,
                        inverseRMS: UnsafeMutableBufferPointer(rebasing: r[t..<t + 1]), into: UnsafeMutableBufferPointer(rebasing: y[row]))
                }
            }
        }
    }

    // MARK: Backward

    /// Adds `dweight += Σ dy ⊙ x̂` over every row, and `dx` (through each row's mean square) when
    /// asked.
    public mutating func backward(
        input x: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>,
        parameters: UnsafeBufferPointer<Scalar>, gradients: UnsafeMutableBufferPointer<Scalar>,
        computeInputGradient: Bool
    ) {
        // x, dy, dx: (rows, features)  weight, dweight: (features)  r: (rows)
        let f = features
        if computeInputGradient { cache.inputGradient.resize(to: x.shape) }
        x.withUnsafeBufferPointer { x in
            dy.withUnsafeBufferPointer { dy in
                cache.inverseRMS.withUnsafeBufferPointer { r in
                    cache.inputGradient.withUnsafeMutableBufferPointer { dx in
                        Kernels.rmsNormBackward(
                            x, outputGradient: dy, weight: UnsafeBufferPointer(rebasing: parameters[0..<f]), inverseRMS: r,
                            weightGradient: UnsafeMutableBufferPointer(rebasing: gradients[0..<f]),
                            into: computeInputGradient ? dx : nil)
                    }
                }
            }
        }
    }
}

extension Naive {
    /// The definition of ``RMSNorm``'s forward pass, one row at a time in Double: the row's mean
    /// square (divided by the features, as PyTorch's), then `y = x/√(mean(x²) + ε)·weight`.
    ///
    ///     // x: (rows, features)  weight: (features)  →  y: (rows, features)
    public static func rmsNormForward<Scalar>(_ x: Tensor<Scalar>, weight: Tensor<Scalar>, epsilon: Double) -> Tensor<Scalar> {
        let f = weight.count
        var y = Tensor<Scalar>(zeros: x.shape)
        for r in 0..<x.count / f {
            let row = (0..<f).map { Double(x[r * f + $0]) }
            let meanSquare = row.map { $0 * $0 }.reduce(0, +) / Double(f)
            for i in 0..<f {
                y[r * f + i] = Scalar(row[i] / (meanSquare + epsilon).squareRoot() * Double(weight[i]))
            }
        }
        return y
    }

    /// The definition of ``RMSNorm``'s backward pass by the chain rule through each row's whole
    /// Jacobian, one pair of features at a time in Double: with `r = 1/√(mean(x²) + ε)` and
    /// `x̂ᵢ = xᵢ·r`, `∂x̂ᵢ/∂xₖ = r·(δᵢₖ - x̂ᵢ·x̂ₖ/n)` over the row's `n` features (the `x̂ᵢ·x̂ₖ/n`
    /// through the mean square); `dweight = Σ dy·x̂` over the rows.
    ///
    ///     // x, dy: (rows, features)  weight: (features)  →  dweight: (features), dx: (rows, features)
    public static func rmsNormBackward<Scalar>(
        _ x: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>, weight: Tensor<Scalar>, epsilon: Double
    ) -> (weight: Tensor<Scalar>, input: Tensor<Scalar>) {
        let f = weight.count, n = Double(f)
        var dWeight = Tensor<Scalar>(zeros: [f]), dx = Tensor<Scalar>(zeros: x.shape)
        for r in 0..<x.count / f {
            let row = (0..<f).map { Double(x[r * f + $0]) }
            let inverse = 1 / (row.map { $0 * $0 }.reduce(0, +) / n + epsilon).squareRoot()
            let xHat = row.map { $0 * inverse }
            let g = (0..<f).map { Double(dy[r * f + $0]) }
            for i in 0..<f { dWeight[i] += Scalar(g[i] * xHat[i]) }
            for k in 0..<f {
                var sum = 0.0
                for i in 0..<f {
                    let jacobian = inverse * ((i == k ? 1 : 0) - xHat[i] * xHat[k] / n)
                    sum += g[i] * Double(weight[i]) * jacobian
                }
                dx[r * f + k] = Scalar(sum)
            }
        }
        return (dWeight, dx)
    }
}
