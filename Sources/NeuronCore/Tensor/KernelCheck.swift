// A check of the BLAS kernels this process runs, against the plain loops, before anything trains:
// OpenBLAS picks its kernels by CPU when it loads, and some builds compute wrong results on some
// processors (which is why environments pin `OPENBLAS_CORETYPE`). A few products of awkward shapes
// (one element, one row, one column, odd sizes, sizes past the kernels' blocks), every pair of
// transposes, with and without accumulation, in Float and Double.
// The operands are small integers, so every product and sum is exact in both types whatever the
// order of summation: the kernels must give the naive loops' numbers exactly.

extension BLAS {
    /// A product the BLAS kernels computed wrong, named with the kernel set and how to pin another.
    public struct KernelMismatch: Error, Equatable, CustomStringConvertible {
        /// `sgemm`, `dgemm` or `bf16 matmul`.
        public var routine: String
        /// The kernel family OpenBLAS chose, e.g. `Cooperlake`.
        public var kernels: String
        /// `m×n×k, op(A) op(B), beta b`.
        public var product: String
        public var row: Int, column: Int
        public var found: Double, expected: Double

        public var description: String {
            if routine.hasPrefix("bf16") {
                return "\(kernels) computes wrong bf16 products on this machine: \(routine) of \(product) gave \(found) "
                    + "instead of \(expected) at (\(row), \(column)); use training.products: full"
            }
            return "OpenBLAS's \(kernels) kernels compute wrong products on this machine: \(routine) of \(product) gave \(found) "
                + "instead of \(expected) at (\(row), \(column)); set OPENBLAS_CORETYPE to a kernel family this CPU runs "
                + "correctly (OPENBLAS_CORETYPE=Haswell on x86-64 with AVX2) and run again"
        }
    }

    /// The shapes checked, `(m, n, k)`, each with every pair of transposes and both betas: one
    /// element, a row, a column, sizes below and across the kernels' register blocks (16 and 4 or 8
    /// wide), with remainders. The last is past several blocks each way, as a plain product only:
    /// its naive loops are most of the check's cost.
    static let checkedShapes = [(1, 1, 1), (1, 9, 5), (7, 1, 13), (2, 3, 4), (5, 17, 3), (17, 19, 33), (64, 1, 100)]
    static let largeShape = (48, 40, 36)

    /// Checks gemm through this binding against the naive product, once per process; each run
    /// and command calls it before its first product that matters.
    /// - Throws: ``KernelMismatch`` for the first element that differs.
    public static func checkKernels() throws(KernelMismatch) {
        if let mismatch = kernelCheckResult { throw mismatch }
    }

    /// Computed once, on first use (a static is initialized once, thread-safely).
    private static let kernelCheckResult: KernelMismatch? = {
        do throws(KernelMismatch) {
            try checkKernels(Float.self, gemm: Float.blasGemm)
            try checkKernels(Double.self, gemm: Double.blasGemm)
            return nil
        } catch {
            return error
        }
    }()

    /// The check for one type, through `gemm` (the tests hand it a faulty one).
    static func checkKernels<Scalar: TensorScalar>(
        _: Scalar.Type, routine: String? = nil, kernels: String? = nil, extraShapes: [(Int, Int, Int)] = [],
        gemm: (
            _ transposeA: Bool, _ transposeB: Bool, _ m: Int, _ n: Int, _ k: Int, _ alpha: Scalar, _ a: UnsafePointer<Scalar>, _ lda: Int,
            _ b: UnsafePointer<Scalar>, _ ldb: Int, _ beta: Scalar, _ c: UnsafeMutablePointer<Scalar>, _ ldc: Int
        ) -> Void
    ) throws(KernelMismatch) {
        let variants = [(false, false), (true, false), (false, true), (true, true)].flatMap { t in [0, 1].map { (t.0, t.1, $0) } }
        let products =
            checkedShapes.flatMap { shape in variants.map { (shape, $0) } } + [(largeShape, (false, false, 0))]
            + extraShapes.flatMap { shape in variants.map { (shape, $0) } }
        for ((m, n, k), (transposeA, transposeB, beta)) in products {
            // Integers in [-3, 3]: sums of at most 130 products of them are exact in Float, so the
            // kernels and the naive loops agree exactly whatever their order of summation.
            let a = try! Tensor<Scalar>(shape: transposeA ? [k, m] : [m, k], scalars: (0..<m * k).map { Scalar(($0 * 7 + m) % 7 - 3) })
            let b = try! Tensor<Scalar>(shape: transposeB ? [n, k] : [k, n], scalars: (0..<k * n).map { Scalar(($0 * 5 + n) % 7 - 3) })
            var c = try! Tensor<Scalar>(shape: [m, n], scalars: (0..<m * n).map { Scalar($0 % 5 - 2) })
            var expected = c
            // The shapes fit by construction.
            try! Naive.matmul(a, transposeA: transposeA, b, transposeB: transposeB, beta: Scalar(beta), into: &expected)
            a.withUnsafeBufferPointer { pa in
                b.withUnsafeBufferPointer { pb in
                    c.withUnsafeMutableBufferPointer { pc in
                        gemm(
                            transposeA, transposeB, m, n, k, 1, pa.baseAddress!, a.columns, pb.baseAddress!, b.columns, Scalar(beta),
                            pc.baseAddress!, n)
                    }
                }
            }
            if let index = c.scalars.indices.first(where: { c[$0] != expected[$0] }) {
                throw KernelMismatch(
                    routine: routine ?? (Scalar.self == Float.self ? "sgemm" : "dgemm"), kernels: kernels ?? coreName,
                    product: "\(m)×\(n)×\(k), \(transposeA ? "Aᵀ" : "A")·\(transposeB ? "Bᵀ" : "B"), beta \(beta)", row: index / n,
                    column: index % n, found: Double(c[index]), expected: Double(expected[index]))
            }
        }
    }
}
