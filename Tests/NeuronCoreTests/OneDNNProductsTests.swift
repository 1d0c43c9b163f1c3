import COneDNN
import Testing

@testable import NeuronCore

private let oneDNNHere: Bool = if case .oneDNN = BLAS.floatProducts { true } else { false }
private let notHere = Comment(rawValue: "Float products stay on OpenBLAS in this process: \(BLAS.floatProducts)")
private let oneDNNLoaded = neuron_bf16_built() != 0 && neuron_bf16_load_error() == nil
private let oneDNNMissing = Comment(rawValue: "no oneDNN here: built without the trait OneDNN, or libdnnl.so.2 not loadable")

@Suite("Float products from oneDNN's matmul, on request, for the shapes it wins in a step")
struct OneDNNProductsTests {
    @Test("The shapes oneDNN takes: from 2²³ multiply-adds, the left operand not transposed")
    func rule() {
        #expect(!BLAS.takesOneDNN(transposeA: false, transposeB: false, m: 64, n: 64, k: 64))  // an attention head's product
        #expect(!BLAS.takesOneDNN(transposeA: false, transposeB: false, m: 1023, n: 64, k: 128))  // just short
        #expect(BLAS.takesOneDNN(transposeA: false, transposeB: false, m: 1024, n: 64, k: 128))  // 2²³ exactly
        #expect(BLAS.takesOneDNN(transposeA: false, transposeB: false, m: 128, n: 1024, k: 1024))  // W6's forward
        #expect(BLAS.takesOneDNN(transposeA: false, transposeB: true, m: 128, n: 1024, k: 1024))  // W6's dz·wᵀ
        #expect(!BLAS.takesOneDNN(transposeA: true, transposeB: false, m: 1024, n: 1024, k: 128))  // W6's weight gradient
        #expect(BLAS.takesOneDNN(transposeA: false, transposeB: true, m: 2048, n: 1152, k: 384))  // W12's qkv
        #expect(!BLAS.takesOneDNN(transposeA: true, transposeB: true, m: 128, n: 128, k: 1024))
    }

    @Test("OpenBLAS unless asked; every reason to stay on it is said; a failed check keeps OpenBLAS, never wrong numbers")
    func choice() {
        let avx512: Set<String> = ["avx2", "avx512f"]
        func choose(built: Bool = true, requested: Bool = true, loadError: String? = nil, flags: Set<String> = avx512, fails: Bool = false)
            -> BLAS.FloatProducts
        {
            BLAS.floatProducts(built: built, requested: requested, loadError: loadError, cpuFlags: flags) { () throws(BLAS.KernelMismatch) in
                if fails {
                    throw BLAS.KernelMismatch(
                        routine: "oneDNN matmul", kernels: "oneDNN 2.6.3", product: "96×80×72, A·B, beta 0", row: 1, column: 2, found: 5, expected: 4)
                }
            }
        }
        #expect(choose(built: false) == .openBLAS("built without the trait OneDNN"))
        #expect(choose(requested: false) == .openBLAS("the default"))
        #expect(choose(loadError: "oneDNN could not be loaded (x)") == .openBLAS("oneDNN could not be loaded (x)"))
        #expect(choose(flags: ["avx2", "fma"]) == .openBLAS("oneDNN's products were measured faster on AVX-512 only"))
        #expect(choose(fails: true) == .openBLAS("oneDNN's matmul failed its check (96×80×72, A·B, beta 0: 5.0 for 4.0)"))
        if case .oneDNN = choose() {} else { Issue.record("a machine with everything should take oneDNN") }
    }

    @Test(
        "oneDNN's matmul against the naive loops: every transpose, beta 0 and 1, operands read in place with padded strides; any other alpha on OpenBLAS",
        .enabled(if: oneDNNLoaded, oneDNNMissing))
    func matmulAgainstNaive() throws {
        var generator = SeededGenerator(seed: 17)
        let (m, n, k) = (37, 53, 19)
        for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
            for (alpha, beta) in [(Float(1), Float(0)), (1, 1), (0.5, 1)] {
                // Each stored row 3 wider than what the product reads, c's padding set to 7 (which must stay).
                let (aRows, aColumns) = ta ? (k, m) : (m, k)
                let (bRows, bColumns) = tb ? (n, k) : (k, n)
                let (lda, ldb, ldc) = (aColumns + 3, bColumns + 3, n + 3)
                let a = (0..<aRows * lda).map { _ in Float(generator.uniform(-1, 1)) }
                let b = (0..<bRows * ldb).map { _ in Float(generator.uniform(-1, 1)) }
                var c = (0..<m * ldc).map { $0 % ldc < n ? Float(generator.uniform(-1, 1)) : 7 }
                if beta == 0 { for r in 0..<m { for j in 0..<n { c[r * ldc + j] = .nan } } }  // beta 0 ignores c
                var expected = c
                for i in 0..<m {
                    for j in 0..<n {
                        var sum = 0.0
                        for p in 0..<k { sum += Double(ta ? a[p * lda + i] : a[i * lda + p]) * Double(tb ? b[j * ldb + p] : b[p * ldb + j]) }
                        expected[i * ldc + j] = Float(Double(alpha) * sum + (beta == 0 ? 0 : Double(c[i * ldc + j])))
                    }
                }
                let before = BLAS.oneDNNProducts
                a.withUnsafeBufferPointer { pa in
                    b.withUnsafeBufferPointer { pb in
                        c.withUnsafeMutableBufferPointer { pc in
                            BLAS.oneDNNMatmul(ta, tb, m, n, k, alpha, pa.baseAddress!, lda, pb.baseAddress!, ldb, beta, pc.baseAddress!, ldc)
                        }
                    }
                }
                let worst = (0..<c.count).map { abs(c[$0] - expected[$0]) }.max()!
                #expect(worst <= 1e-5, "ta \(ta) tb \(tb) alpha \(alpha) beta \(beta): \(worst) from the naive loops")
                #expect(
                    (BLAS.oneDNNProducts > before) == (alpha == 1),
                    "ta \(ta) tb \(tb) alpha \(alpha) beta \(beta): alpha 1 goes to oneDNN, any other to OpenBLAS")
            }
        }
    }

    @Test(
        "Products past the threshold, a not transposed, go to oneDNN in panels and agree with the naive loops; aᵀ·b stays on OpenBLAS",
        .enabled(if: oneDNNHere, notHere))
    func productsAgainstNaive() throws {
        var generator = SeededGenerator(seed: 17)
        let threads = BLAS.threadCount
        defer { BLAS.threadCount = threads }
        for count in [1, 3] {
            BLAS.threadCount = count
            for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
                for beta in [Float(0), 1] {
                    let (m, n, k) = (256, 200, 170)  // 8.7M multiply-adds: past 2²³
                    let a = Tensor<Float>.random(ta ? [k, m] : [m, k], using: &generator)
                    let b = Tensor<Float>.random(tb ? [n, k] : [k, n], using: &generator)
                    let c0 = Tensor<Float>.random([m, n], using: &generator)
                    var routed = c0, naive = c0
                    let before = BLAS.oneDNNProducts
                    try Tensor.matmul(a, transposeA: ta, b, transposeB: tb, beta: beta, into: &routed)
                    try Naive.matmul(a, transposeA: ta, b, transposeB: tb, beta: beta, into: &naive)
                    #expect((BLAS.oneDNNProducts > before) == !ta, "\(count) threads, ta \(ta) tb \(tb) beta \(beta): routed wrongly")
                    let worst = (0..<routed.count).map { abs(routed[$0] - naive[$0]) }.max()!
                    #expect(worst <= 1e-4, "\(count) threads, ta \(ta) tb \(tb) beta \(beta): \(worst) from the naive loops")
                }
            }
        }
    }
}
