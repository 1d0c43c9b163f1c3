// What differs between Float and Double, and nothing else: the BLAS routines (s or d), the C
// library's scalar functions, and tanh, erf and exp over a buffer (vectorized approximations for Float,
// the C library's for Double). Every other loop is one generic body in the `Kernels` namespace
// (`Kernels/`), specialized there by one rule; a new layer adds kernels there, not requirements here.
//
// The scalar functions are spelled `libmTanh`, `libmExp`, `libmLog`, `libmErf`: they say where the numbers come
// from (the reference numbers of Docs/Reference.md §1–3 depend on glibc's), and they leave `tanh`,
// `exp` and `log` on Float and Double to the standard library's and swift-numerics' `RealModule`.

/// A scalar type the engine computes in: `Float` or `Double`, with what differs between them.
///
/// Engine code reaches these through ``Kernels`` and the layers; the shape-checked operations on
/// ``Tensor`` are the public face for everyone else.
public protocol TensorScalar: BinaryFloatingPoint, LosslessStringConvertible, Codable, Sendable
where RawSignificand: FixedWidthInteger {
    // MARK: BLAS (Tensor/BLAS.swift, the only file that imports the C library)

    /// Row-major `c = alpha * op(a) * op(b) + beta * c` (BLAS gemm).
    static func blasGemm(
        transposeA: Bool, transposeB: Bool, m: Int, n: Int, k: Int,
        alpha: Self, a: UnsafePointer<Self>, lda: Int,
        b: UnsafePointer<Self>, ldb: Int,
        beta: Self, c: UnsafeMutablePointer<Self>, ldc: Int)

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
}

extension Float: TensorScalar {}
extension Double: TensorScalar {}
