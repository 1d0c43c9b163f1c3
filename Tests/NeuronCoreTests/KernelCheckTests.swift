import Testing

@testable import NeuronCore

@Suite("The BLAS kernels' check against the naive product")
struct KernelCheckTests {
    @Test("This machine's kernels give the naive loops' exact products, Float and Double")
    func passesHere() throws {
        try BLAS.checkKernels()
    }

    @Test("A kernel that is off by one in a large product is caught, naming the routine, the product, the element and the kernel set")
    func catchesAWrongProduct() {
        // The real sgemm, then one element of every product of the large product (48 rows) moved by 1.
        func faulty(
            _ ta: Bool, _ tb: Bool, _ m: Int, _ n: Int, _ k: Int, _ alpha: Float, _ a: UnsafePointer<Float>, _ lda: Int,
            _ b: UnsafePointer<Float>, _ ldb: Int, _ beta: Float, _ c: UnsafeMutablePointer<Float>, _ ldc: Int
        ) {
            Float.blasGemm(
                transposeA: ta, transposeB: tb, m: m, n: n, k: k, alpha: alpha, a: a, lda: lda, b: b, ldb: ldb, beta: beta, c: c, ldc: ldc)
            if m == 48 { c[3 * ldc + 5] += 1 }
        }
        #expect {
            try BLAS.checkKernels(Float.self, gemm: faulty)
        } throws: { error in
            guard let mismatch = error as? BLAS.KernelMismatch else { return false }
            return mismatch.routine == "sgemm" && mismatch.product == "48×40×36, A·B, beta 0" && mismatch.row == 3 && mismatch.column == 5
                && mismatch.found == mismatch.expected + 1 && "\(mismatch)".contains("\(BLAS.coreName) kernels")
                && "\(mismatch)".contains("OPENBLAS_CORETYPE")
        }
    }
}
