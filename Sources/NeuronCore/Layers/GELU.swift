// GELU, the Gaussian error linear unit (Hendrycks & Gimpel 2016; GPT-2's activation): each input
// scaled by the probability that a standard normal falls below it, `y = x·Φ(x)`. A layer of its
// own rather than an ``Activation`` case: its derivative needs `x`, not only `y`, which the
// activations' backward (from the saved output alone) does not have. No parameters; forward keeps
// the gate `Φ(x)` for backward, and each pass is one kernel call (`Kernels/ActivationKernels.swift`).

/// Which form of GELU: PyTorch's `nn.GELU(approximate=…)`.
public enum GELUApproximation: String, Sendable, Codable, CaseIterable, CustomStringConvertible {
    /// The exact form, `x·Φ(x) = x/2·(1 + erf(x/√2))`, PyTorch's default (`approximate='none'`).
    /// (Write `GELUApproximation.none` next to an optional: `.none` alone is nil.)
    case none
    /// The tanh form, `x/2·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`, PyTorch's `approximate='tanh'`
    /// (GPT-2's): within 4.8e-4 of the exact form (the widest gap at |x| ≈ 2.7).
    case tanh

    public var description: String { rawValue }
}

/// The Gaussian error linear unit, element by element: `y = x·Φ(x)` with `Φ` the standard normal's
/// distribution function, or its tanh approximation, e.g. `GELU(256)` or `GELU(8×64, tanh)`.
///
/// Input and output are `(batch, shape…)`, any shape: `[features]`, `[time, features]`. No parameters.
public struct GELU<Scalar: TensorScalar>: Layer {
    /// Which form of GELU (``GELUApproximation``).
    public typealias Approximation = GELUApproximation

    public let inputShape: [Int]
    /// The exact form (`.none`, the default) or the tanh approximation.
    public let approximation: Approximation

    /// What forward keeps for backward, and backward's own buffer; sized when a batch shape is
    /// first seen, then reused.
    public struct Cache: Sendable {
        /// `y = x ⊙ gate`, like the input.
        public var output = Tensor<Scalar>(zeros: [0, 0])
        /// `Φ(x)` (the tanh form: `(1 + tanh(u))/2`), like the input: `y = x ⊙ gate`, and the
        /// tanh form's derivative is written in it.
        public var gate = Tensor<Scalar>(zeros: [0, 0])
        /// `dx = dy ⊙ (gate + x·gate′)`, like the input, only when asked for.
        public var inputGradient = Tensor<Scalar>(zeros: [0, 0])
    }

    /// The layer's caches.
    public private(set) var cache = Cache()

    /// GELU over samples of shape `shape` (any shape: it acts on each element).
    /// - Parameters:
    ///   - shape: one sample's shape, e.g. `[features]` or `[time, features]`.
    ///   - approximation: `.none` (the default, PyTorch's) for `x·Φ(x)` with erf, `.tanh` for the
    ///     tanh form.
    /// - Throws: ``NetworkError/invalidLayer(_:reason:)`` unless the shape has at least one
    ///   dimension, each at least 1, and can be held.
    public init(shape: [Int], approximation: Approximation = .none) throws(NetworkError) {
        guard !shape.isEmpty, heldCount(shape) != nil else {
            throw .invalidLayer("GELU(\(imageDescription(shape)))", reason: "takes samples of a positive shape, got \(TensorError.format(shape))")
        }
        inputShape = shape
        self.approximation = approximation
    }

    /// `GELU(256)`, or `GELU(8×64, tanh)` for the tanh form.
    public var description: String {
        "GELU(\(imageDescription(inputShape))" + (approximation == .none ? ")" : ", \(approximation))")
    }

    public var outputShape: [Int] { inputShape }
    public var parameterShapes: [(name: String, shape: [Int])] { [] }

    public func converted<Other: TensorScalar>(to: Other.Type) -> any Layer<Other> {
        try! GELU<Other>(shape: inputShape, approximation: approximation)  // the shape was checked when self was built
    }

    public var output: Tensor<Scalar> { cache.output }
    public var inputGradient: Tensor<Scalar> { cache.inputGradient }

    /// Nothing to initialize.
    public func initialize(
        parameters: UnsafeMutableBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>,
        using generator: inout SeededGenerator
    ) {}

    // MARK: Forward

    /// `y = x·Φ(x)` (or the tanh form) element by element, keeping `Φ(x)` for backward.
    public mutating func forward(
        _ x: Tensor<Scalar>, parameters: UnsafeBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>,
        mode: LayerMode
    ) {
        // x, gate, y: (batch, shape…), element by element
        cache.output.resize(to: x.shape)
        cache.gate.resize(to: x.shape)
        let approximation = approximation
        x.withUnsafeBufferPointer { x in
            cache.gate.withUnsafeMutableBufferPointer { gate in
                cache.output.withUnsafeMutableBufferPointer { y in
                    Kernels.geluForward(x, approximation: approximation, gate: gate, into: y)
                }
            }
        }
    }

    /// Over a sequence, element by element, so position by position.
    public var runsByPosition: Bool { inputShape.count == 2 }

    /// Position `position`'s row alone, keeping its gate.
    public mutating func forward(
        position t: Int, _ x: Tensor<Scalar>, parameters: UnsafeBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>
    ) {
        // x, gate, y: (1, time, features), their row t, element by element
        let f = inputShape[1], row = t * f..<(t + 1) * f, approximation = approximation
        x.withUnsafeBufferPointer { x in
            cache.gate.withUnsafeMutableBufferPointer { gate in
                cache.output.withUnsafeMutableBufferPointer { y in
                    Kernels.geluForward(
                        UnsafeBufferPointer(rebasing: x[row]), approximation: approximation,
                        gate: UnsafeMutableBufferPointer(rebasing: gate[row]), into: UnsafeMutableBufferPointer(rebasing: y[row]))
                }
            }
        }
    }

    // MARK: Backward

    /// `dx = dy ⊙ (Φ(x) + x·φ(x))` when asked (the tanh form: its own derivative); no parameters,
    /// so nothing otherwise.
    public mutating func backward(
        input x: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>,
        parameters: UnsafeBufferPointer<Scalar>, gradients: UnsafeMutableBufferPointer<Scalar>,
        computeInputGradient: Bool
    ) {
        // x, gate, dy, dx: (batch, shape…), element by element
        guard computeInputGradient else { return }
        cache.inputGradient.resize(to: x.shape)
        let approximation = approximation
        x.withUnsafeBufferPointer { x in
            cache.gate.withUnsafeBufferPointer { gate in
                dy.withUnsafeBufferPointer { dy in
                    cache.inputGradient.withUnsafeMutableBufferPointer { dx in
                        Kernels.geluBackward(x, gate: gate, outputGradient: dy, approximation: approximation, into: dx)
                    }
                }
            }
        }
    }
}

extension Naive {
    /// The definition of ``GELU``'s forward pass, one element at a time, from PyTorch's formulas:
    /// `x/2·(1 + erf(x/√2))`, or `x/2·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`, in the C library's
    /// erf and tanh of the scalar type.
    ///
    ///     // x → y: any shape
    public static func geluForward<Scalar: TensorScalar>(_ x: Tensor<Scalar>, approximation: GELUApproximation) -> Tensor<Scalar> {
        var y = x
        for i in 0..<x.count {
            let v = x[i]
            switch approximation {
            case .none:
                y[i] = v / 2 * (1 + Scalar.libmErf(v / Scalar(2).squareRoot()))
            case .tanh:
                let u = (2 / Scalar.pi).squareRoot() * (v + 0.044715 * v * v * v)
                y[i] = v / 2 * (1 + Scalar.libmTanh(u))
            }
        }
        return y
    }

    /// The definition of ``GELU``'s backward pass, one element at a time: `dx = dy·f′(x)` with the
    /// derivatives written out from `x` (nothing saved): exact, `f′ = Φ(x) + x·φ(x)`, `φ(x) =
    /// e^(-x²/2)/√(2π)`; tanh form, `f′ = (1 + tanh u)/2 + x/2·sech²(u)·√(2/π)·(1 + 3·0.044715·x²)`,
    /// sech² as `1/cosh²`.
    ///
    ///     // x, dy → dx: any shape
    public static func geluBackward<Scalar: TensorScalar>(
        _ x: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>, approximation: GELUApproximation
    ) -> Tensor<Scalar> {
        var dx = x
        for i in 0..<x.count {
            let v = x[i]
            let derivative: Scalar
            switch approximation {
            case .none:
                let cdf = (1 + Scalar.libmErf(v / Scalar(2).squareRoot())) / 2
                let pdf = Scalar.libmExp(-v * v / 2) / (2 * Scalar.pi).squareRoot()
                derivative = cdf + v * pdf
            case .tanh:
                let k = (2 / Scalar.pi).squareRoot()
                let u = k * (v + 0.044715 * v * v * v)
                let cosh = (Scalar.libmExp(u) + Scalar.libmExp(-u)) / 2
                derivative = (1 + Scalar.libmTanh(u)) / 2 + v / 2 / (cosh * cosh) * k * (1 + 3 * 0.044715 * v * v)
            }
            dx[i] = dy[i] * derivative
        }
        return dx
    }
}
