// The one seam between Swift and C: every BLAS call in Neuron goes through this file, and no
// other file imports CBLAS. Each scalar type maps the same Swift requirement onto its own
// single- (s) or double- (d) precision routine.
import CBLAS
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A scalar type the engine computes in: `Float` or `Double`, each bridged to its BLAS routines.
///
/// The `blas…` requirements are the raw seam (pointers, row-major, C integers). Engine code does
/// not call them directly; it calls the shape-checked operations on ``Tensor``.
public protocol TensorScalar: BinaryFloatingPoint, LosslessStringConvertible, Codable, Sendable
where RawSignificand: FixedWidthInteger {
    /// Row-major `c = alpha * op(a) * op(b) + beta * c` (BLAS gemm).
    static func blasGemm(
        transposeA: Bool, transposeB: Bool, m: Int, n: Int, k: Int,
        alpha: Self, a: UnsafePointer<Self>, lda: Int,
        b: UnsafePointer<Self>, ldb: Int,
        beta: Self, c: UnsafeMutablePointer<Self>, ldc: Int)

    /// Row-major `y = alpha * op(a) * x + beta * y` with `a` stored as (m, n) (BLAS gemv).
    static func blasGemv(
        transposeA: Bool, m: Int, n: Int,
        alpha: Self, a: UnsafePointer<Self>, lda: Int,
        x: UnsafePointer<Self>, beta: Self, y: UnsafeMutablePointer<Self>)

    /// `y += alpha * x` over `n` contiguous elements (BLAS axpy).
    static func blasAxpy(n: Int, alpha: Self, x: UnsafePointer<Self>, y: UnsafeMutablePointer<Self>)

    /// `x *= alpha` over `n` contiguous elements (BLAS scal).
    static func blasScal(n: Int, alpha: Self, x: UnsafeMutablePointer<Self>)

    /// The C library's hyperbolic tangent (glibc's `tanh` / `tanhf`), so results match the
    /// reference numbers computed with the same libm.
    static func tanh(_ x: Self) -> Self

    /// tanh of every element in place, as fast as the type allows: Double calls the C library's
    /// tanh (the reference numbers depend on it); Float uses a vectorizable rational approximation
    /// (``Float/tanh(inPlace:)``).
    static func tanh(inPlace values: UnsafeMutableBufferPointer<Self>)

    /// The C library's natural exponential.
    static func exp(_ x: Self) -> Self

    /// The C library's natural logarithm.
    static func log(_ x: Self) -> Self
}

@inline(__always)
private func transpose(_ flag: Bool) -> CBLAS_TRANSPOSE { flag ? CblasTrans : CblasNoTrans }

@inline(__always)
private func blasInt(_ value: Int) -> blasint {
    precondition(value <= Int(blasint.max), "BLAS dimension \(value) exceeds the 32-bit BLAS interface")
    return blasint(value)
}

extension Float: TensorScalar {
    @inlinable @inline(__always)
    public static func tanh(_ x: Float) -> Float { tanhf(x) }
    @inlinable @inline(__always)
    public static func exp(_ x: Float) -> Float { expf(x) }
    @inlinable @inline(__always)
    public static func log(_ x: Float) -> Float { logf(x) }

    public static func blasGemm(
        transposeA: Bool, transposeB: Bool, m: Int, n: Int, k: Int,
        alpha: Float, a: UnsafePointer<Float>, lda: Int,
        b: UnsafePointer<Float>, ldb: Int,
        beta: Float, c: UnsafeMutablePointer<Float>, ldc: Int
    ) {
        cblas_sgemm(
            CblasRowMajor,          // order
            transpose(transposeA),  // transA
            transpose(transposeB),  // transB
            blasInt(m), blasInt(n), blasInt(k),
            alpha, a, blasInt(lda),
            b, blasInt(ldb),
            beta, c, blasInt(ldc))
    }

    public static func blasGemv(
        transposeA: Bool, m: Int, n: Int,
        alpha: Float, a: UnsafePointer<Float>, lda: Int,
        x: UnsafePointer<Float>, beta: Float, y: UnsafeMutablePointer<Float>
    ) {
        cblas_sgemv(
            CblasRowMajor,          // order
            transpose(transposeA),  // transA
            blasInt(m), blasInt(n),
            alpha, a, blasInt(lda),
            x, 1,                   // incX
            beta, y, 1)             // incY
    }

    public static func blasAxpy(n: Int, alpha: Float, x: UnsafePointer<Float>, y: UnsafeMutablePointer<Float>) {
        cblas_saxpy(blasInt(n), alpha, x, 1 /* incX */, y, 1 /* incY */)
    }

    public static func blasScal(n: Int, alpha: Float, x: UnsafeMutablePointer<Float>) {
        cblas_sscal(blasInt(n), alpha, x, 1 /* incX */)
    }
}

extension Double: TensorScalar {
    @inlinable @inline(__always)
    public static func tanh(_ x: Double) -> Double { Glibc.tanh(x) }
    @inlinable @inline(__always)
    public static func exp(_ x: Double) -> Double { Glibc.exp(x) }
    @inlinable @inline(__always)
    public static func log(_ x: Double) -> Double { Glibc.log(x) }

    public static func blasGemm(
        transposeA: Bool, transposeB: Bool, m: Int, n: Int, k: Int,
        alpha: Double, a: UnsafePointer<Double>, lda: Int,
        b: UnsafePointer<Double>, ldb: Int,
        beta: Double, c: UnsafeMutablePointer<Double>, ldc: Int
    ) {
        cblas_dgemm(
            CblasRowMajor,          // order
            transpose(transposeA),  // transA
            transpose(transposeB),  // transB
            blasInt(m), blasInt(n), blasInt(k),
            alpha, a, blasInt(lda),
            b, blasInt(ldb),
            beta, c, blasInt(ldc))
    }

    public static func blasGemv(
        transposeA: Bool, m: Int, n: Int,
        alpha: Double, a: UnsafePointer<Double>, lda: Int,
        x: UnsafePointer<Double>, beta: Double, y: UnsafeMutablePointer<Double>
    ) {
        cblas_dgemv(
            CblasRowMajor,          // order
            transpose(transposeA),  // transA
            blasInt(m), blasInt(n),
            alpha, a, blasInt(lda),
            x, 1,                   // incX
            beta, y, 1)             // incY
    }

    public static func blasAxpy(n: Int, alpha: Double, x: UnsafePointer<Double>, y: UnsafeMutablePointer<Double>) {
        cblas_daxpy(blasInt(n), alpha, x, 1 /* incX */, y, 1 /* incY */)
    }

    public static func blasScal(n: Int, alpha: Double, x: UnsafeMutablePointer<Double>) {
        cblas_dscal(blasInt(n), alpha, x, 1 /* incX */)
    }
}

/// The BLAS library behind the tensor core: which build it is, and how many threads it uses.
public enum BLAS {
    /// The number of threads OpenBLAS uses for each call. Setting it clamps to at least 1.
    public static var threadCount: Int {
        get { Int(openblas_get_num_threads()) }
        set { openblas_set_num_threads(Int32(max(1, newValue))) }
    }

    /// The number of processors OpenBLAS sees.
    public static var processorCount: Int { Int(openblas_get_num_procs()) }

    /// OpenBLAS's own description of its build, e.g. `OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64`.
    public static var configuration: String {
        guard let config = openblas_get_config() else { return "OpenBLAS (unknown build)" }
        return String(cString: config)
    }

    /// The CPU kernel family OpenBLAS selected at load time, e.g. `Haswell`.
    public static var coreName: String {
        guard let name = openblas_get_corename() else { return "unknown" }
        return String(cString: name)
    }

    /// One line for logs and reports: build, kernel family and thread count.
    public static var summary: String {
        "\(configuration.trimmingTrailingSpaces) · \(coreName) kernels · \(threadCount) thread\(threadCount == 1 ? "" : "s")"
    }
}

private extension String {
    var trimmingTrailingSpaces: String {
        var s = Substring(self)
        while s.last == " " { s = s.dropLast() }
        return String(s)
    }
}
