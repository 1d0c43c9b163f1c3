// Float products from oneDNN's matmul primitive, on request, behind the one seam.
//
// Benchmarks/products timed every product shape of W4–W6 and W9–W12 in Debian's OpenBLAS 0.3.21,
// OpenBLAS 0.3.34 (PyPI's scipy-openblas32), BLIS 0.9 and oneDNN 2.6.3 (its sgemm and its matmul
// primitive), each library alone in its process, on a 2-core Zen 5 (Benchmarks/README.md has the
// tables). On the libraries' own two threads, oneDNN was the fastest or near it on every product of
// 2¹⁹ multiply-adds and more; on one thread, as Neuron calls every product (its panels,
// `Tensor/ProductThreads.swift`), OpenBLAS 0.3.34 gained nothing on 0.3.21, and oneDNN's matmul
// kept its lead on the products whose left operand is not transposed (W6's `x·w` and `dz·wᵀ`), not
// on the weight gradients (`aᵀ·b`). oneDNN's sgemm, sent the shapes it won alone on its own
// threads, made W4–W6's steps no faster and often slower: two thread pools on two cores.
//
// So, on request (`NEURON_FLOAT_PRODUCTS=onednn`, with the trait `OneDNN`, on AVX-512, where it was
// measured), a Float product of ``BLAS/oneDNNMinimumWork`` multiply-adds or more whose left operand
// is not transposed, with alpha 1 and beta 0 or 1, goes to oneDNN's matmul primitive, cut into the
// same panels as OpenBLAS's products, each panel on one OpenMP thread (the product thread's own),
// which made W6's step faster than on OpenBLAS (Benchmarks/README.md, “Figures behind the code”:
// oneDNN's matmul on request, with the figures above). It is not the default
// because oneDNN allocates on every call (5–7 blocks: W4, W5 and W6 then allocate 16, 34 and 68
// times a step, where OpenBLAS's panels allocate nothing). It is taken once it has passed the exact
// check OpenBLAS's kernels pass (`BLAS.checkKernels`'s products of small integers).
import COneDNN
import Foundation

extension BLAS {
    /// Which library computes the Float products ``takesOneDNN(transposeA:transposeB:m:n:k:)`` picks, and why.
    public enum FloatProducts: Sendable, Equatable {
        /// oneDNN's matmul primitive (its version named).
        case oneDNN(String)
        /// OpenBLAS for every one, with the reason.
        case openBLAS(String)
    }

    /// The environment variable that sends the shapes oneDNN wins to its matmul primitive (`onednn`).
    public static let floatProductsVariable = "NEURON_FLOAT_PRODUCTS"

    /// The smallest product, in multiply-adds (m·n·k), that oneDNN's matmul takes: the panels'
    /// threshold (``panelMinimumWork``), so that a product oneDNN takes is cut as OpenBLAS's are.
    public static let oneDNNMinimumWork = panelMinimumWork

    /// Whether a product of this shape goes to oneDNN's matmul when it is in use: from
    /// ``oneDNNMinimumWork`` multiply-adds, its left operand not transposed.
    @inline(__always)
    public static func takesOneDNN(transposeA: Bool, transposeB: Bool, m: Int, n: Int, k: Int) -> Bool {
        takesOneDNN(transposeA: transposeA, work: m &* n &* k)
    }

    /// The same rule for a product of `work` multiply-adds (m·n·k, which `blasGemm` has already).
    @inline(__always)
    static func takesOneDNN(transposeA: Bool, work: Int) -> Bool {
        !transposeA && work >= oneDNNMinimumWork
    }

    /// The choice for this process, made once, at the first Float product that could go to oneDNN.
    public static let floatProducts: FloatProducts = {
        let environment = ProcessInfo.processInfo.environment
        return floatProducts(
            built: neuron_bf16_built() != 0, requested: environment[floatProductsVariable]?.lowercased() == "onednn",
            loadError: neuron_bf16_built() != 0 ? neuron_bf16_load_error().map { String(cString: $0) } : nil, cpuFlags: cpuFlags,
            check: { () throws(KernelMismatch) in
                try checkKernels(Float.self, routine: "oneDNN matmul", kernels: bf16Library, extraShapes: [(96, 80, 72)], gemm: oneDNNMatmul)
            })
    }()

    /// ``floatProducts`` for the user's request, a build with or without oneDNN, oneDNN's loading
    /// error, a CPU with `cpuFlags` and oneDNN's check (tests: any machine, a planted fault).
    public static func floatProducts(
        built: Bool, requested: Bool, loadError: String?, cpuFlags: Set<String>, check: () throws(KernelMismatch) -> Void
    ) -> FloatProducts {
        guard requested else { return .openBLAS("the default") }
        guard built else { return .openBLAS("built without the trait OneDNN") }
        if let loadError { return .openBLAS(loadError) }
        guard cpuFlags.contains("avx512f") else { return .openBLAS("oneDNN's products were measured faster on AVX-512 only") }
        do {
            try check()
        } catch {
            return .openBLAS("oneDNN's matmul failed its check (\(error.product): \(error.found) for \(error.expected))")
        }
        return .oneDNN(bf16Library)
    }

    /// Whether ``floatProducts`` is oneDNN: read by every Float product past the threshold (a Bool,
    /// so that reading it copies no string).
    static let usesOneDNN: Bool = if case .oneDNN = floatProducts { true } else { false }

    /// What ``summary`` says of Float products: nothing by default; oneDNN's part when asked for, or
    /// why the request was refused.
    static var floatProductsNote: String? {
        switch floatProducts {
        case .oneDNN(let library): "Float products from 2²³ multiply-adds, a not transposed: \(library) matmul, in panels"
        case .openBLAS(let reason): reason == "the default" ? nil : "Float products: OpenBLAS (\(floatProductsVariable)=onednn refused: \(reason))"
        }
    }

    /// How many Float products oneDNN has computed in this process (a test sees a product go there).
    static var oneDNNProducts: Int { neuron_onednn_products() }

    /// oneDNN's matmul on the calling thread, whatever the shape (the check's), for alpha 1 and beta
    /// 0 or 1 (what its primitives are made for); OpenBLAS's for any other, or where oneDNN cannot
    /// run it (counted as a fallback).
    static func oneDNNMatmul(
        _ transposeA: Bool, _ transposeB: Bool, _ m: Int, _ n: Int, _ k: Int, _ alpha: Float, _ a: UnsafePointer<Float>, _ lda: Int,
        _ b: UnsafePointer<Float>, _ ldb: Int, _ beta: Float, _ c: UnsafeMutablePointer<Float>, _ ldc: Int
    ) {
        if alpha == 1, beta == 0 || beta == 1 {
            let accumulate: Int32 = beta == 0 ? 0 : 1
            if neuron_onednn_matmul(transposeA ? 1 : 0, transposeB ? 1 : 0, m, n, k, a, lda, b, ldb, accumulate, c, ldc) == 0 { return }
            neuron_bf16_count_fallback()
        }
        Float.fullGemm(
            transposeA: transposeA, transposeB: transposeB, m: m, n: n, k: k, alpha: alpha, a: a, lda: lda, b: b, ldb: ldb,
            beta: beta, c: c, ldc: ldc)
    }

    /// One panel of a product oneDNN takes, cut over the product threads (`Tensor/ProductThreads.swift`).
    static func oneDNNPanel(
        _ transposeA: Bool, _ transposeB: Bool, _ m: Int, _ n: Int, _ k: Int, _ alpha: Double, _ a: UnsafeRawPointer, _ lda: Int,
        _ b: UnsafeRawPointer, _ ldb: Int, _ beta: Double, _ c: UnsafeMutableRawPointer, _ ldc: Int
    ) {
        oneDNNMatmul(
            transposeA, transposeB, m, n, k, Float(alpha), a.assumingMemoryBound(to: Float.self), lda, b.assumingMemoryBound(to: Float.self),
            ldb, Float(beta), c.assumingMemoryBound(to: Float.self), ldc)
    }
}
