// What differs between Float and Double, and nothing else: the BLAS routines (s or d), the C
// library's scalar functions, tanh, erf and exp over a buffer (vectorized approximations for Float,
// the C library's for Double), and the hottest fused passes (GELU, layer normalization, Adam), which
// Float runs in C at the CPU's vector width (Tensor/VectorKernels.swift) and Double as the Swift
// loops of their kernels. Every other loop is one generic body in the `Kernels` namespace
// (`Kernels/`), specialized there by one rule; a new layer adds kernels there, not requirements here.
//
// The scalar functions are spelled `libmTanh`, `libmExp`, `libmLog`, `libmErf`: they say where the numbers come
// from (the reference numbers of Docs/Reference.md §1–3 depend on glibc's), and they leave `tanh`,
// `exp` and `log` on Float and Double to the standard library's and swift-numerics' `RealModule`.

/// A scalar type the engine computes in: `Float` or `Double`, with what differs between them.
///
/// Engine code reaches these through ``Kernels`` and the layers; the shape-checked operations on
/// ``Tensor`` are the public face for everyone else.
public protocol TensorScalar: BinaryFloatingPoint, LosslessStringConvertible, Codable, Sendable, SIMDScalar
where RawSignificand: FixedWidthInteger {
    // MARK: BLAS (Tensor/BLAS.swift, the only file that imports the C library)

    /// Row-major `c = alpha * op(a) * op(b) + beta * c` (BLAS gemm).
    static func blasGemm(
        transposeA: Bool, transposeB: Bool, m: Int, n: Int, k: Int,
        alpha: Self, a: UnsafePointer<Self>, lda: Int,
        b: UnsafePointer<Self>, ldb: Int,
        beta: Self, c: UnsafeMutablePointer<Self>, ldc: Int)

    /// Row-major `y = alpha * op(a) * x + beta * y` (BLAS gemv), `a` an `(m, n)` matrix whose rows
    /// lie `lda` apart, `x` and `y` contiguous: one position's product at a time (decoding a token),
    /// where a gemm of one row would pack the whole matrix first.
    static func blasGemv(
        transpose: Bool, m: Int, n: Int,
        alpha: Self, a: UnsafePointer<Self>, lda: Int,
        x: UnsafePointer<Self>,
        beta: Self, y: UnsafeMutablePointer<Self>)

    /// `x *= alpha` over `n` contiguous elements (BLAS scal).
    static func blasScal(n: Int, alpha: Self, x: UnsafeMutablePointer<Self>)

    // MARK: The C library's scalar functions

    /// The C library's hyperbolic tangent (glibc's `tanh` / `tanhf`), so results match the
    /// reference numbers computed with the same libm (Docs/Reference.md §1–3).
    static func libmTanh(_ x: Self) -> Self
    /// The C library's natural exponential (`exp` / `expf`).
    static func libmExp(_ x: Self) -> Self
    /// The C library's natural logarithm (`log` / `logf`).
    static func libmLog(_ x: Self) -> Self
    /// The C library's error function (`erf` / `erff`), GELU's: `erf(x) = 2/√π ∫₀ˣ e^(-t²) dt`.
    static func libmErf(_ x: Self) -> Self

    // MARK: tanh over a buffer (Tensor/VectorTanh.swift)

    /// tanh of every element in place, as fast as the type allows: Double calls the C library's
    /// tanh (the reference numbers depend on it); Float uses a vectorizable rational approximation.
    static func tanh(inPlace values: UnsafeMutableBufferPointer<Self>)

    // MARK: erf over a buffer (Tensor/VectorErf.swift)

    /// erf of every element in place, as fast as the type allows: Double calls the C library's
    /// erf; Float uses a vectorizable rational approximation (GELU's forward pass).
    static func erf(inPlace values: UnsafeMutableBufferPointer<Self>)

    // MARK: exp over a buffer (Tensor/VectorExp.swift)

    /// e^x of every element in place, as fast as the type allows: Double calls the C library's
    /// exp; Float uses a vectorizable polynomial (the attention's softmax, GELU's backward pass).
    static func exp(inPlace values: UnsafeMutableBufferPointer<Self>)

    // MARK: Fused passes (Tensor/VectorKernels.swift for Float; the kernels' Swift loops otherwise)

    /// ``Kernels/geluForward(_:approximation:gate:into:)``'s pass: Float's is one C loop at the
    /// CPU's vector width; the default, Double's, is `Kernels.geluForwardLoops`.
    static func geluForward(
        _ x: UnsafeBufferPointer<Self>, approximation: GELUApproximation, gate: UnsafeMutableBufferPointer<Self>,
        into y: UnsafeMutableBufferPointer<Self>)

    /// ``Kernels/geluBackward(_:gate:outputGradient:approximation:into:)``'s pass: Float's is one C
    /// loop at the CPU's vector width; the default, Double's, is `Kernels.geluBackwardLoops`.
    static func geluBackward(
        _ x: UnsafeBufferPointer<Self>, gate: UnsafeBufferPointer<Self>, outputGradient dy: UnsafeBufferPointer<Self>,
        approximation: GELUApproximation, into dx: UnsafeMutableBufferPointer<Self>)

    /// ``Kernels/layerNormForward(_:weight:bias:epsilon:mean:inverseDeviation:into:)``'s pass: Float's
    /// is C at the CPU's vector width; the default, Double's, is `Kernels.layerNormForwardLoops`.
    static func layerNormForward(
        _ x: UnsafeBufferPointer<Self>, weight: UnsafeBufferPointer<Self>, bias: UnsafeBufferPointer<Self>,
        epsilon: Double, mean: UnsafeMutableBufferPointer<Self>, inverseDeviation s: UnsafeMutableBufferPointer<Self>,
        into y: UnsafeMutableBufferPointer<Self>)

    /// ``Kernels/layerNormBackward(_:outputGradient:weight:mean:inverseDeviation:weightGradient:biasGradient:into:)``'s
    /// pass: Float's is C at the CPU's vector width; the default, Double's, is `Kernels.layerNormBackwardLoops`.
    static func layerNormBackward(
        _ x: UnsafeBufferPointer<Self>, outputGradient dy: UnsafeBufferPointer<Self>, weight: UnsafeBufferPointer<Self>,
        mean: UnsafeBufferPointer<Self>, inverseDeviation s: UnsafeBufferPointer<Self>,
        weightGradient: UnsafeMutableBufferPointer<Self>, biasGradient: UnsafeMutableBufferPointer<Self>,
        into dx: UnsafeMutableBufferPointer<Self>?)

    /// ``Kernels/adamUpdate(parameters:gradients:m:v:step:)``'s pass: Float's is C at the CPU's
    /// vector width; the default, Double's, is `Kernels.adamUpdateLoop`.
    static func adamUpdate(
        parameters p: UnsafeMutableBufferPointer<Self>, gradients g: UnsafeBufferPointer<Self>,
        m: UnsafeMutableBufferPointer<Self>, v: UnsafeMutableBufferPointer<Self>, step: AdamStep<Self>)
}

// Double's fused passes (and any type's without its own): the kernels' Swift loops.
extension TensorScalar {
    public static func geluForward(
        _ x: UnsafeBufferPointer<Self>, approximation: GELUApproximation, gate: UnsafeMutableBufferPointer<Self>,
        into y: UnsafeMutableBufferPointer<Self>
    ) {
        Kernels.geluForwardLoops(x, approximation: approximation, gate: gate, into: y)
    }

    public static func geluBackward(
        _ x: UnsafeBufferPointer<Self>, gate: UnsafeBufferPointer<Self>, outputGradient dy: UnsafeBufferPointer<Self>,
        approximation: GELUApproximation, into dx: UnsafeMutableBufferPointer<Self>
    ) {
        Kernels.geluBackwardLoops(x, gate: gate, outputGradient: dy, approximation: approximation, into: dx)
    }

    public static func layerNormForward(
        _ x: UnsafeBufferPointer<Self>, weight: UnsafeBufferPointer<Self>, bias: UnsafeBufferPointer<Self>,
        epsilon: Double, mean: UnsafeMutableBufferPointer<Self>, inverseDeviation s: UnsafeMutableBufferPointer<Self>,
        into y: UnsafeMutableBufferPointer<Self>
    ) {
        Kernels.layerNormForwardLoops(x, weight: weight, bias: bias, epsilon: epsilon, mean: mean, inverseDeviation: s, into: y)
    }

    public static func layerNormBackward(
        _ x: UnsafeBufferPointer<Self>, outputGradient dy: UnsafeBufferPointer<Self>, weight: UnsafeBufferPointer<Self>,
        mean: UnsafeBufferPointer<Self>, inverseDeviation s: UnsafeBufferPointer<Self>,
        weightGradient: UnsafeMutableBufferPointer<Self>, biasGradient: UnsafeMutableBufferPointer<Self>,
        into dx: UnsafeMutableBufferPointer<Self>?
    ) {
        Kernels.layerNormBackwardLoops(
            x, outputGradient: dy, weight: weight, mean: mean, inverseDeviation: s,
            weightGradient: weightGradient, biasGradient: biasGradient, into: dx)
    }

    public static func adamUpdate(
        parameters p: UnsafeMutableBufferPointer<Self>, gradients g: UnsafeBufferPointer<Self>,
        m: UnsafeMutableBufferPointer<Self>, v: UnsafeMutableBufferPointer<Self>, step: AdamStep<Self>
    ) {
        Kernels.adamUpdateLoop(parameters: p, gradients: g, m: m, v: v, step: step)
    }
}

extension Float: TensorScalar {}
extension Double: TensorScalar {}
