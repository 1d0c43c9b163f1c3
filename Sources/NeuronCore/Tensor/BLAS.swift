// swift-format-ignore-file
// (The C arguments stay aligned with their labels, as in the C manual.)
// The one seam between Swift and C: every BLAS call in Neuron goes through this file, and no
// other file imports CBLAS. A Float product goes to oneDNN instead when its thread asks for
// bfloat16 operands (`Tensor/BFloat16.swift`), or, on request (`NEURON_FLOAT_PRODUCTS=onednn`), for
// the shapes oneDNN's matmul measured faster in a step (`Tensor/OneDNNProducts.swift`). Each scalar
// type maps the same requirement of ``TensorScalar`` onto its own single- (s) or double- (d)
// precision routine.
import COneDNN
import CBLAS
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@inline(__always)
private func transpose(_ flag: Bool) -> CBLAS_TRANSPOSE { flag ? CblasTrans : CblasNoTrans }

@inline(__always)
private func blasInt(_ value: Int) -> blasint {
    precondition(value <= Int(blasint.max), "BLAS dimension \(value) exceeds the 32-bit BLAS interface")
    return blasint(value)
}

/// The `beta` to hand OpenBLAS once `c` is ready for it: for `beta = 0` on a large `c`, clears
/// `c` here and returns 1. OpenBLAS computes `beta = 0` the same way, clearing `c` and then adding
/// the product onto it, so the numbers are the same; but its clearing pass is slower
/// than memset's (Benchmarks/README.md, “Figures behind the code”: beta 0 by memset). Small
/// products keep OpenBLAS's own pass: theirs costs nothing to speak of.
@inline(__always)
private func preparedBeta<T: BinaryFloatingPoint>(_ beta: T, m: Int, n: Int, c: UnsafeMutablePointer<T>, ldc: Int) -> T {
    guard beta == 0, m * n >= 1 << 14 else { return beta }
    if ldc == n {
        c.update(repeating: 0, count: m * n)
    } else {
        for row in 0..<m { (c + row * ldc).update(repeating: 0, count: n) }
    }
    return 1
}

extension Float {
    @inlinable @inline(__always)
    public static func libmTanh(_ x: Float) -> Float { tanhf(x) }
    @inlinable @inline(__always)
    public static func libmExp(_ x: Float) -> Float { expf(x) }
    @inlinable @inline(__always)
    public static func libmLog(_ x: Float) -> Float { logf(x) }
    @inlinable @inline(__always)
    public static func libmErf(_ x: Float) -> Float { erff(x) }

    /// The product: on bfloat16 operands when the calling thread asks for them (`BLAS.setProducts(_:)`)
    /// and it is worth it (`BLAS.bf16MinimumWork`),
    /// else, on request, by oneDNN's matmul for the shapes it wins (`Tensor/OneDNNProducts.swift`), else by OpenBLAS.
    public static func blasGemm(
        transposeA: Bool, transposeB: Bool, m: Int, n: Int, k: Int,
        alpha: Float, a: UnsafePointer<Float>, lda: Int,
        b: UnsafePointer<Float>, ldb: Int,
        beta: Float, c: UnsafeMutablePointer<Float>, ldc: Int
    ) {
        let work = m &* n &* k
        if work >= BLAS.bf16MinimumWork, neuron_bf16_active() != 0 {  // the size first: no call for a tiny product
            BLAS.bf16Gemm(transposeA, transposeB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
            return
        }
        if BLAS.takesOneDNN(transposeA: transposeA, work: work), alpha == 1, beta == 0 || beta == 1, BLAS.usesOneDNN {
            BLAS.panelGemm(
                transposeA: transposeA, transposeB: transposeB, m: m, n: n, k: k, alpha: alpha, a: a, lda: lda, b: b, ldb: ldb, beta: beta,
                c: c, ldc: ldc, gemm: BLAS.oneDNNPanel)
            return
        }
        if work >= BLAS.openBLASThreadingWork {  // a product OpenBLAS could thread: cut into panels, or on its one thread
            if BLAS.takesPanels(work: work) {
                BLAS.panelGemm(transposeA: transposeA, transposeB: transposeB, m: m, n: n, k: k, alpha: alpha, a: a, lda: lda, b: b, ldb: ldb, beta: beta, c: c, ldc: ldc, gemm: panel)
                return
            }
            BLAS.settleThreads()
        }
        fullGemm(transposeA: transposeA, transposeB: transposeB, m: m, n: n, k: k, alpha: alpha, a: a, lda: lda, b: b, ldb: ldb, beta: beta, c: c, ldc: ldc)
    }

    /// One panel of a product cut over the product threads (`Tensor/ProductThreads.swift`).
    static func panel(
        _ transposeA: Bool, _ transposeB: Bool, _ m: Int, _ n: Int, _ k: Int, _ alpha: Double, _ a: UnsafeRawPointer, _ lda: Int,
        _ b: UnsafeRawPointer, _ ldb: Int, _ beta: Double, _ c: UnsafeMutableRawPointer, _ ldc: Int
    ) {
        fullGemm(
            transposeA: transposeA, transposeB: transposeB, m: m, n: n, k: k, alpha: Float(alpha), a: a.assumingMemoryBound(to: Float.self), lda: lda,
            b: b.assumingMemoryBound(to: Float.self), ldb: ldb, beta: Float(beta), c: c.assumingMemoryBound(to: Float.self), ldc: ldc)
    }

    /// OpenBLAS's sgemm (on the thread that calls it, threading by panels).
    static func fullGemm(
        transposeA: Bool, transposeB: Bool, m: Int, n: Int, k: Int,
        alpha: Float, a: UnsafePointer<Float>, lda: Int,
        b: UnsafePointer<Float>, ldb: Int,
        beta: Float, c: UnsafeMutablePointer<Float>, ldc: Int
    ) {
        let beta = preparedBeta(beta, m: m, n: n, c: c, ldc: ldc)
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
        transpose trans: Bool, m: Int, n: Int,
        alpha: Float, a: UnsafePointer<Float>, lda: Int,
        x: UnsafePointer<Float>,
        beta: Float, y: UnsafeMutablePointer<Float>
    ) {
        cblas_sgemv(
            CblasRowMajor,          // order
            transpose(trans),       // trans
            blasInt(m), blasInt(n),
            alpha, a, blasInt(lda),
            x, 1,                   // incX
            beta, y, 1)             // incY
    }

    public static func blasScal(n: Int, alpha: Float, x: UnsafeMutablePointer<Float>) {
        cblas_sscal(blasInt(n), alpha, x, 1 /* incX */)
    }
}

extension Double {
    @inlinable @inline(__always)
    public static func libmTanh(_ x: Double) -> Double { Glibc.tanh(x) }
    @inlinable @inline(__always)
    public static func libmExp(_ x: Double) -> Double { Glibc.exp(x) }
    @inlinable @inline(__always)
    public static func libmLog(_ x: Double) -> Double { Glibc.log(x) }
    @inlinable @inline(__always)
    public static func libmErf(_ x: Double) -> Double { Glibc.erf(x) }

    /// The product: cut over the product threads when it is large enough (`Tensor/ProductThreads.swift`), else OpenBLAS's dgemm.
    public static func blasGemm(
        transposeA: Bool, transposeB: Bool, m: Int, n: Int, k: Int,
        alpha: Double, a: UnsafePointer<Double>, lda: Int,
        b: UnsafePointer<Double>, ldb: Int,
        beta: Double, c: UnsafeMutablePointer<Double>, ldc: Int
    ) {
        let work = m &* n &* k
        if work >= BLAS.openBLASThreadingWork {  // a product OpenBLAS could thread: cut into panels, or on its one thread
            if BLAS.takesPanels(work: work) {
                BLAS.panelGemm(transposeA: transposeA, transposeB: transposeB, m: m, n: n, k: k, alpha: alpha, a: a, lda: lda, b: b, ldb: ldb, beta: beta, c: c, ldc: ldc, gemm: panel)
                return
            }
            BLAS.settleThreads()
        }
        fullGemm(transposeA: transposeA, transposeB: transposeB, m: m, n: n, k: k, alpha: alpha, a: a, lda: lda, b: b, ldb: ldb, beta: beta, c: c, ldc: ldc)
    }

    /// One panel of a product cut over the product threads.
    static func panel(
        _ transposeA: Bool, _ transposeB: Bool, _ m: Int, _ n: Int, _ k: Int, _ alpha: Double, _ a: UnsafeRawPointer, _ lda: Int,
        _ b: UnsafeRawPointer, _ ldb: Int, _ beta: Double, _ c: UnsafeMutableRawPointer, _ ldc: Int
    ) {
        fullGemm(
            transposeA: transposeA, transposeB: transposeB, m: m, n: n, k: k, alpha: alpha, a: a.assumingMemoryBound(to: Double.self), lda: lda,
            b: b.assumingMemoryBound(to: Double.self), ldb: ldb, beta: beta, c: c.assumingMemoryBound(to: Double.self), ldc: ldc)
    }

    /// OpenBLAS's dgemm (on the thread that calls it, threading by panels).
    static func fullGemm(
        transposeA: Bool, transposeB: Bool, m: Int, n: Int, k: Int,
        alpha: Double, a: UnsafePointer<Double>, lda: Int,
        b: UnsafePointer<Double>, ldb: Int,
        beta: Double, c: UnsafeMutablePointer<Double>, ldc: Int
    ) {
        let beta = preparedBeta(beta, m: m, n: n, c: c, ldc: ldc)
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
        transpose trans: Bool, m: Int, n: Int,
        alpha: Double, a: UnsafePointer<Double>, lda: Int,
        x: UnsafePointer<Double>,
        beta: Double, y: UnsafeMutablePointer<Double>
    ) {
        cblas_dgemv(
            CblasRowMajor,          // order
            transpose(trans),       // trans
            blasInt(m), blasInt(n),
            alpha, a, blasInt(lda),
            x, 1,                   // incX
            beta, y, 1)             // incY
    }

    public static func blasScal(n: Int, alpha: Double, x: UnsafeMutablePointer<Double>) {
        cblas_dscal(blasInt(n), alpha, x, 1 /* incX */)
    }
}

/// The BLAS library behind the tensor core: which build it is, and how many threads its products use.
public enum BLAS {
    /// OpenBLAS's own thread count, for the whole process: 1 when Neuron threads the products by
    /// panels (``threadCount``, `Tensor/ProductThreads.swift`).
    static var openBLASThreadCount: Int32 {
        get { openblas_get_num_threads() }
        set { openblas_set_num_threads(newValue) }
    }

    /// The threads a process sets for a network that splits each batch over `batchThreads`
    /// (`Network.batchThreads`): `blasThreads` for a batch computed whole, else 1, so that each
    /// share's products run on one thread beside the others'. The count is one for the whole
    /// process (``threadCount``), so it is set once, when the process chooses its work, and never
    /// per step.
    public static func threadCount(blasThreads: Int, batchThreads: Int) -> Int { batchThreads > 1 ? 1 : blasThreads }

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

    /// One line for logs and reports: build, kernel family (and why it was chosen, or the better
    /// one to set: `runOnBestKernels()`) and the product threads (OpenBLAS's, when
    /// `NEURON_PRODUCT_THREADS=openblas` gave them back).
    public static var summary: String {
        let note = choiceNote.map { " (\($0))" } ?? ""
        let threading = productThreading == .openBLAS ? " (OpenBLAS's)" : ""
        return "\(configuration.trimmingTrailingSpaces) · \(coreName) kernels\(note) · \(threadCount) thread\(threadCount == 1 ? "" : "s")\(threading)"
            + (floatProductsNote.map { " · \($0)" } ?? "")
    }
}

private extension String {
    var trimmingTrailingSpaces: String {
        var s = Substring(self)
        while s.last == " " { s = s.dropLast() }
        return String(s)
    }
}
