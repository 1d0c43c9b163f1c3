// Float products from oneDNN's sgemm, on request, behind the one seam.
//
// Benchmarks/products timed every product shape of W4–W6 and W9–W12 in Debian's OpenBLAS 0.3.21,
// OpenBLAS 0.3.34 (PyPI's scipy-openblas32), BLIS 0.9 and oneDNN 2.6.3 (its sgemm and its matmul
// primitive), each library alone in its process, on a 2-core Zen 5 (Benchmarks/README.md has the
// table). Alone, oneDNN's sgemm was the fastest or near it on every product of 2¹⁹ multiply-adds
// and more (1.1–4.5× OpenBLAS 0.3.21's), and slower on every smaller one (the attention's per-head
// products, 64×64×64 and under) and on `a·bᵀ` with a long inner dimension (W6's `dz·wᵀ`: 1,239 µs
// against 857). In the engine's steps, with those shapes routed to it and the rest left to
// OpenBLAS, it did not pay: W4–W6 interleaved three times each way were no faster and often slower
// (W6 6.3–9.4 ms against 5.5–7.4), two thread pools on two cores, and oneDNN's sgemm allocates on
// every call (W6: 29 allocations a step against OpenBLAS's 8). So OpenBLAS stays the default,
// and `NEURON_FLOAT_PRODUCTS=onednn` (with the trait `OneDNN`, on AVX-512, where it was measured)
// sends those shapes to oneDNN's sgemm, once it has passed the exact check OpenBLAS's kernels pass
// (`BLAS.checkKernels`'s products of small integers), on a product past the threshold too.
import COneDNN
import Foundation

extension BLAS {
    /// Which library computes Float products past ``oneDNNMinimumWork``, and why.
    public enum FloatProducts: Sendable, Equatable {
        /// oneDNN's sgemm (its version named), for the products ``takesOneDNN(transposeA:transposeB:m:n:k:)`` picks.
        case oneDNN(String)
        /// OpenBLAS for every one, with the reason.
        case openBLAS(String)
    }

    /// The environment variable that sends the shapes oneDNN won to its sgemm (`onednn`).
    public static let floatProductsVariable = "NEURON_FLOAT_PRODUCTS"

    /// The smallest product, in multiply-adds (m·n·k), that oneDNN's sgemm takes.
    public static let oneDNNMinimumWork = 1 << 19

    /// Whether a product of this shape goes to oneDNN's sgemm when it is in use: from
    /// ``oneDNNMinimumWork`` multiply-adds, unless it is `a·bᵀ` with an inner dimension of 1024 or more.
    @inline(__always)
    public static func takesOneDNN(transposeA: Bool, transposeB: Bool, m: Int, n: Int, k: Int) -> Bool {
        m &* n &* k >= oneDNNMinimumWork && !(transposeB && !transposeA && k >= 1024)
    }

    /// The choice for this process, made once, at the first Float product that could go to oneDNN.
    public static let floatProducts: FloatProducts = {
        let environment = ProcessInfo.processInfo.environment
        return floatProducts(
            built: neuron_bf16_built() != 0, requested: environment[floatProductsVariable]?.lowercased() == "onednn",
            loadError: neuron_bf16_built() != 0 ? neuron_bf16_load_error().map { String(cString: $0) } : nil, cpuFlags: cpuFlags,
            check: { () throws(KernelMismatch) in
                try checkKernels(Float.self, routine: "oneDNN sgemm", kernels: bf16Library, extraShapes: [(96, 80, 72)], gemm: oneDNNSgemm)
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
            return .openBLAS("oneDNN's sgemm failed its check (\(error.product): \(error.found) for \(error.expected))")
        }
        return .oneDNN(bf16Library)
    }

    /// Whether ``floatProducts`` is oneDNN: read by every Float product (a Bool, so that reading it
    /// copies no string).
    static let usesOneDNN: Bool = if case .oneDNN = floatProducts { true } else { false }

    /// What ``summary`` says of Float products: nothing by default; oneDNN's part when asked for, or
    /// why the request was refused.
    static var floatProductsNote: String? {
        switch floatProducts {
        case .oneDNN(let library): "Float products from 2¹⁹ multiply-adds: \(library) sgemm"
        case .openBLAS(let reason): reason == "the default" ? nil : "Float products: OpenBLAS (\(floatProductsVariable)=onednn refused: \(reason))"
        }
    }

    /// oneDNN's sgemm, whatever the shape (the check's); OpenBLAS's where oneDNN cannot run it.
    static func oneDNNSgemm(
        _ transposeA: Bool, _ transposeB: Bool, _ m: Int, _ n: Int, _ k: Int, _ alpha: Float, _ a: UnsafePointer<Float>, _ lda: Int,
        _ b: UnsafePointer<Float>, _ ldb: Int, _ beta: Float, _ c: UnsafeMutablePointer<Float>, _ ldc: Int
    ) {
        let status = neuron_onednn_sgemm(
            transposeA ? 1 : 0, transposeB ? 1 : 0, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, Int32(clamping: threadCount))
        if status != 0 {
            neuron_bf16_count_fallback()
            Float.fullGemm(
                transposeA: transposeA, transposeB: transposeB, m: m, n: n, k: k, alpha: alpha, a: a, lda: lda, b: b, ldb: ldb,
                beta: beta, c: c, ldc: ldc)
        }
    }
}
