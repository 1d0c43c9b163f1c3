// bfloat16 products: the one place Float products leave Float. A network whose `products` is `.bf16`
// runs each of its matrix products on operands rounded to bfloat16 (8 bits of significand, Float's
// range), summed and written in Float, through oneDNN's matmul (the package's trait `OneDNN`) on a
// CPU with `avx512_bf16`: about twice the products a second of Float's on such a CPU. What
// is kept stays Float: the parameters (the master weights), the gradients, the optimizer's state,
// and every reduction outside the products (the loss, softmax, LayerNorm, the bias sums). This is
// PyTorch's CPU autocast to bfloat16, and, as there, the setting is per thread: a bf16 network sets
// it around each of its passes on the thread that runs it (``BLAS/setProducts(_:)``), so that two
// networks in one process, or two tests, never see each other's; a full network leaves the thread's
// setting alone (Float products, unless its caller set bf16 around it).
import COneDNN

/// The operands of a network's matrix products.
public enum ProductPrecision: String, Sendable, Equatable, CaseIterable {
    /// In the network's own scalar type (the default).
    case full
    /// Float operands rounded to bfloat16 (ties to even), products summed in Float: Float networks
    /// on a build with the trait `OneDNN` and a CPU with `avx512_bf16` (``BLAS/bf16Refusal``).
    case bf16
}

extension BLAS {
    /// Why bf16 products cannot run in this process, as a sentence saying what to do; nil when they can.
    public static var bf16Refusal: String? {
        let built = neuron_bf16_built() != 0
        return bf16Refusal(built: built, loadError: built ? neuron_bf16_load_error().map { String(cString: $0) } : nil, cpuFlags: cpuFlags)
    }

    /// ``bf16Refusal`` for a build with or without oneDNN, oneDNN's loading error when it failed
    /// to load, and a CPU with `cpuFlags` (tests: any machine).
    public static func bf16Refusal(built: Bool, loadError: String?, cpuFlags: Set<String>) -> String? {
        guard built else {
            return "this neuron was built without bf16 products: install oneDNN (apt-get install libdnnl-dev) and build with --traits OneDNN"
        }
        if let loadError { return "\(loadError): install it (apt-get install libdnnl-dev)" }
        guard cpuFlags.contains("avx512_bf16") else {
            return "this CPU has no avx512_bf16 instructions (bf16 products need an AMD Zen 4 or later, or an Intel Cooper Lake, "
                + "Sapphire Rapids or later); use training.products: full"
        }
        return nil
    }

    /// The library that computes bf16 products, e.g. `oneDNN 2.6.3`; empty without the trait `OneDNN`.
    public static var bf16Library: String { String(cString: neuron_bf16_library()) }

    /// Products that fell back to Float because oneDNN could not make or run their primitive
    /// (none is expected; each still computes right, in Float).
    public static var bf16Fallbacks: Int { neuron_bf16_fallbacks() }

    /// One line for a run's summary: `bf16 (oneDNN 2.6.3, brg:avx512_core_bf16)`, the implementations
    /// oneDNN chose for the products made in this process, and the products that fell back to Float, if any.
    public static var bf16Summary: String {
        var names = [CChar](repeating: 0, count: 256)
        neuron_bf16_implementations(&names, names.count)
        let implementation = String(decoding: names.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let fallbacks = bf16Fallbacks
        return "bf16 (\(bf16Library)\(implementation.isEmpty ? "" : ", \(implementation)"))"
            + (fallbacks > 0 ? "; \(fallbacks) product\(fallbacks == 1 ? "" : "s") fell back to Float" : "")
    }

    /// The smallest product, in multiply-adds (m·n·k), that runs on bfloat16 operands when they are
    /// asked for; smaller ones stay in Float with OpenBLAS, where rounding their operands and
    /// oneDNN's cost per call outweigh the products (W9's per-head products, 16×16×16, thousands a
    /// step; Benchmarks/README.md, “Figures behind the code”: the smallest bf16 product).
    public static let bf16MinimumWork = 1 << 16

    /// The calling thread's product precision for Float products (``ProductPrecision/full`` unless set).
    public static var products: ProductPrecision { neuron_bf16_active() != 0 ? .bf16 : .full }

    /// Sets the calling thread's product precision for Float products and returns the one it
    /// replaces, for the caller to put back. Double products are never rounded.
    @discardableResult
    public static func setProducts(_ precision: ProductPrecision) -> ProductPrecision {
        let previous = products
        neuron_bf16_set_active(precision == .bf16 ? 1 : 0)
        return previous
    }

    /// For a network's pass: sets the calling thread's products to `precision` when it is bf16 and
    /// returns the setting it replaced, for ``leaveProducts(_:)``; for full products sets nothing
    /// (nil), so that a pass of the default network makes no call into the setting. (A static
    /// function of the precision alone: a method reading the network would copy it.)
    @inline(__always)
    static func enterProducts(_ precision: ProductPrecision) -> ProductPrecision? {
        precision == .full ? nil : setProducts(precision)
    }

    /// Puts back what ``enterProducts(_:)`` replaced, if it replaced anything.
    @inline(__always)
    static func leaveProducts(_ outside: ProductPrecision?) { if let outside { setProducts(outside) } }

    /// Checks bf16 products against the naive loops, once per process (the check of
    /// ``checkKernels()`` on oneDNN's products: small integers are exact in bfloat16 too).
    /// - Throws: ``KernelMismatch`` for the first element that differs.
    public static func checkBF16Products() throws(KernelMismatch) {
        if let mismatch = bf16CheckResult { throw mismatch }
    }

    private static let bf16CheckResult: KernelMismatch? = {
        do throws(KernelMismatch) {
            try checkKernels(Float.self, routine: "bf16 matmul", kernels: bf16Library, gemm: bf16Gemm)
            return nil
        } catch {
            return error
        }
    }()

    /// A product on bfloat16 operands, whatever the thread's setting; false when oneDNN could not
    /// run it (or the build has no oneDNN), in which case `c` is untouched unless `beta` is neither 0 nor 1.
    static func bf16Gemm(
        _ transposeA: Bool, _ transposeB: Bool, _ m: Int, _ n: Int, _ k: Int, _ alpha: Float, _ a: UnsafePointer<Float>, _ lda: Int,
        _ b: UnsafePointer<Float>, _ ldb: Int, _ beta: Float, _ c: UnsafeMutablePointer<Float>, _ ldc: Int
    ) {
        if !tryBF16Gemm(transposeA, transposeB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) {
            neuron_bf16_count_fallback()
            Float.fullGemm(
                transposeA: transposeA, transposeB: transposeB, m: m, n: n, k: k, alpha: alpha, a: a, lda: lda, b: b, ldb: ldb,
                beta: beta, c: c, ldc: ldc)
        }
    }

    @inline(__always)
    static func tryBF16Gemm(
        _ transposeA: Bool, _ transposeB: Bool, _ m: Int, _ n: Int, _ k: Int, _ alpha: Float, _ a: UnsafePointer<Float>, _ lda: Int,
        _ b: UnsafePointer<Float>, _ ldb: Int, _ beta: Float, _ c: UnsafeMutablePointer<Float>, _ ldc: Int
    ) -> Bool {
        neuron_bf16_gemm(
            transposeA ? 1 : 0, transposeB ? 1 : 0, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, Int32(clamping: threadCount)) == 0
    }
}

/// bfloat16's rounding of Float, the reference for the C conversion: to nearest, ties to even,
/// NaN kept a NaN. Written on the bits, apart from the C one, for the tests' oracle.
extension Naive {
    /// `x` rounded to bfloat16 and widened back to Float (exact).
    public static func bfloat16(_ x: Float) -> Float {
        if x.isNaN { return x }
        let bits = x.bitPattern, low = bits & 0xFFFF, high = bits & 0xFFFF_0000
        let lsb = (bits >> 16) & 1
        // Above half way, or exactly half way with an odd last bit: round away from zero (one up in
        // the magnitude's bits, which carries into the exponent, and past the largest finite into ∞).
        let up = low > 0x8000 || (low == 0x8000 && lsb == 1)
        return Float(bitPattern: up ? high &+ 0x1_0000 : high)
    }
}

extension Float {
    /// Rounds `x` to bfloat16 into `y` (both `count` long), as bf16 products round their operands.
    public static func roundToBFloat16(_ x: UnsafeBufferPointer<Float>, into y: UnsafeMutableBufferPointer<UInt16>) {
        precondition(y.count >= x.count, "bfloat16 rounding: \(y.count) places for \(x.count) values")
        neuron_bf16_round(x.baseAddress!, y.baseAddress!, x.count)
    }

    /// Widens bfloat16 values to Float (exact).
    public static func widenBFloat16(_ x: UnsafeBufferPointer<UInt16>, into y: UnsafeMutableBufferPointer<Float>) {
        precondition(y.count >= x.count, "bfloat16 widening: \(y.count) places for \(x.count) values")
        neuron_bf16_widen(x.baseAddress!, y.baseAddress!, x.count)
    }
}
