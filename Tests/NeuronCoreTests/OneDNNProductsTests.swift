import Testing

@testable import NeuronCore

private let oneDNNHere: Bool = if case .oneDNN = BLAS.floatProducts { true } else { false }
private let notHere = Comment(rawValue: "Float products stay on OpenBLAS in this process: \(BLAS.floatProducts)")

@Suite("Float products from oneDNN's sgemm, on request, for the shapes it won alone")
struct OneDNNProductsTests {
    @Test("The shapes oneDNN takes: from 2¹⁹ multiply-adds, but not a·bᵀ with an inner dimension of 1024 or more")
    func rule() {
        #expect(!BLAS.takesOneDNN(transposeA: false, transposeB: false, m: 64, n: 64, k: 64))  // an attention head's product
        #expect(!BLAS.takesOneDNN(transposeA: false, transposeB: false, m: 127, n: 64, k: 64))  // just short
        #expect(BLAS.takesOneDNN(transposeA: false, transposeB: false, m: 128, n: 64, k: 64))  // 2¹⁹ exactly
        #expect(BLAS.takesOneDNN(transposeA: true, transposeB: false, m: 1024, n: 1024, k: 128))  // W6's weight gradient
        #expect(BLAS.takesOneDNN(transposeA: false, transposeB: false, m: 128, n: 1024, k: 1024))  // W6's forward
        #expect(!BLAS.takesOneDNN(transposeA: false, transposeB: true, m: 128, n: 1024, k: 1024))  // W6's dz·wᵀ
        #expect(BLAS.takesOneDNN(transposeA: false, transposeB: true, m: 2048, n: 1152, k: 384))  // W12's qkv
        #expect(BLAS.takesOneDNN(transposeA: true, transposeB: true, m: 128, n: 128, k: 1024))
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
                        routine: "oneDNN sgemm", kernels: "oneDNN 2.6.3", product: "96×80×72, A·B, beta 0", row: 1, column: 2, found: 5, expected: 4)
                }
            }
        }
        #expect(choose(built: false) == .openBLAS("built without the trait OneDNN"))
        #expect(choose(requested: false) == .openBLAS("the default"))
        #expect(choose(loadError: "oneDNN could not be loaded (x)") == .openBLAS("oneDNN could not be loaded (x)"))
        #expect(choose(flags: ["avx2", "fma"]) == .openBLAS("oneDNN's products were measured faster on AVX-512 only"))
        #expect(choose(fails: true) == .openBLAS("oneDNN's sgemm failed its check (96×80×72, A·B, beta 0: 5.0 for 4.0)"))
        if case .oneDNN = choose() {} else { Issue.record("a machine with everything should take oneDNN") }
    }

    @Test("Products past the threshold go to oneDNN and agree with the naive loops, every transpose and beta", .enabled(if: oneDNNHere, notHere))
    func productsAgainstNaive() throws {
        var generator = SeededGenerator(seed: 17)
        for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
            for beta in [Float(0), 1] {
                let (m, n, k) = (96, 80, 72)
                let a = Tensor<Float>.random(ta ? [k, m] : [m, k], using: &generator)
                let b = Tensor<Float>.random(tb ? [n, k] : [k, n], using: &generator)
                let c0 = Tensor<Float>.random([m, n], using: &generator)
                var routed = c0, direct = c0, naive = c0
                try Tensor.matmul(a, transposeA: ta, b, transposeB: tb, alpha: 0.5, beta: beta, into: &routed)
                try Naive.matmul(a, transposeA: ta, b, transposeB: tb, alpha: 0.5, beta: beta, into: &naive)
                a.withUnsafeBufferPointer { pa in
                    b.withUnsafeBufferPointer { pb in
                        direct.withUnsafeMutableBufferPointer { pc in
                            BLAS.oneDNNSgemm(ta, tb, m, n, k, 0.5, pa.baseAddress!, a.columns, pb.baseAddress!, b.columns, beta, pc.baseAddress!, n)
                        }
                    }
                }
                #expect(routed.scalars == direct.scalars, "ta \(ta) tb \(tb) beta \(beta): the product did not go to oneDNN")
                let worst = (0..<routed.count).map { abs(routed[$0] - naive[$0]) }.max()!
                #expect(worst <= 1e-4, "ta \(ta) tb \(tb) beta \(beta): \(worst) from the naive loops")
            }
        }
    }
}
