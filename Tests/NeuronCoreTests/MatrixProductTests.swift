import Testing

@testable import NeuronCore

@Suite("Matrix products: BLAS against the naive loops")
struct MatrixProductTests {
    @Test("A product worked by hand")
    func handWorked() throws {
        func check<Scalar: TensorScalar>(_: Scalar.Type) throws {
            // a: (1, 3)  b: (3, 2)  →  [[1·0 + 2·2 + 3·4, 1·1 + 2·3 + 3·5]] = [[16, 22]]
            let a = try Tensor<Scalar>(rows: [[1, 2, 3]])
            let b = try Tensor<Scalar>(rows: [[0, 1], [2, 3], [4, 5]])
            #expect(try Tensor.matmul(a, b).rowArrays == [[16, 22]])
            // aᵀ·a: (3, 1)·(1, 3) is the outer product.
            #expect(try Tensor.matmul(a, transposeA: true, a).rowArrays == [[1, 2, 3], [2, 4, 6], [3, 6, 9]])
            // alpha and beta: c = 2·a·b + 1·c, starting from c = [[1, 1]]
            var c = try Tensor<Scalar>(rows: [[1, 1]])
            try Tensor.matmul(a, b, alpha: 2, beta: 1, into: &c)
            #expect(c.rowArrays == [[33, 45]])
        }
        try check(Float.self)
        try check(Double.self)
    }

    /// Shapes chosen to hit BLAS kernels' edges: 1×1, vectors, non-square, sizes off multiples of 4, 8 and 16.
    static let shapes: [(m: Int, n: Int, k: Int)] = [
        (1, 1, 1), (1, 7, 1), (7, 1, 3), (3, 5, 2), (17, 9, 33), (31, 65, 15), (64, 64, 64), (129, 33, 100), (2, 3, 257),
    ]

    @Test("gemm equals the naive loops for every transpose, alpha and beta", arguments: [false, true], [false, true])
    func gemmMatchesNaive(transposeA: Bool, transposeB: Bool) throws {
        func check<Scalar: TensorScalar>(_: Scalar.Type) throws {
            var generator = SeededGenerator(seed: 42)
            for (m, n, k) in Self.shapes {
                let a = Tensor<Scalar>.random(transposeA ? [k, m] : [m, k], using: &generator)
                let b = Tensor<Scalar>.random(transposeB ? [n, k] : [k, n], using: &generator)
                let start = Tensor<Scalar>.random([m, n], using: &generator)
                for (alpha, beta) in [(Scalar(1), Scalar(0)), (Scalar(-0.5), Scalar(1)), (Scalar(2), Scalar(0.25))] {
                    var fast = start, slow = start
                    try Tensor.matmul(a, transposeA: transposeA, b, transposeB: transposeB, alpha: alpha, beta: beta, into: &fast)
                    try Naive.matmul(a, transposeA: transposeA, b, transposeB: transposeB, alpha: alpha, beta: beta, into: &slow)
                    // Each entry sums k products of numbers in [-1, 1): scaled by |alpha| ≤ 2.
                    expectClose(fast.scalars, slow.scalars, tolerance: 2 * summationTolerance(Scalar.self, terms: k))
                }
            }
        }
        try check(Float.self)
        try check(Double.self)
    }

    @Test("beta = 0 ignores what the output held, even NaN")
    func betaZeroOverwrites() throws {
        let a = try Tensor<Double>(rows: [[1, 2], [3, 4]])
        var c = try Tensor<Double>(shape: [2, 2], repeating: .nan)
        try Tensor.matmul(a, a, into: &c)
        #expect(c.rowArrays == [[7, 10], [15, 22]])
    }

    @Test("Mismatched shapes throw an error naming both shapes")
    func shapeMismatch() throws {
        let a = Tensor<Float>(zeros: [2, 3])
        let b = Tensor<Float>(zeros: [4, 5])
        #expect(throws: TensorError.self) { try Tensor.matmul(a, b) }
        do {
            _ = try Tensor.matmul(a, b)
        } catch {
            #expect(error.description.contains("(2, 3)") && error.description.contains("(4, 5)"), "\(error)")
        }
        // The transposed view fits, so this one must not throw: aᵀ (3, 2) · (2, 3)
        #expect(try Tensor.matmul(a, transposeA: true, a).shape == [3, 3])
        // A wrong output buffer names its shape and the expected one.
        var c = Tensor<Float>(zeros: [3, 3])
        #expect(
            throws: TensorError.shapeMismatch(
                operation: "matmul output", left: [3, 3], right: [2, 2],
                expected: "the output must have the product's shape (2, 2)")
        ) {
            try Tensor.matmul(a, a, transposeB: true, into: &c)
        }
        // A vector is not a matrix.
        #expect(throws: TensorError.self) { try Tensor.matmul(Tensor<Float>(vector: [1, 2]), a) }
    }

    @Test("An empty inner dimension leaves beta · c")
    func emptyInnerDimension() throws {
        let a = Tensor<Double>(zeros: [2, 0]), b = Tensor<Double>(zeros: [0, 3])
        var c = try Tensor<Double>(shape: [2, 3], repeating: 4)
        try Tensor.matmul(a, b, beta: 0.5, into: &c)
        #expect(c.scalars == Array(repeating: 2, count: 6))
    }

    @Test("beta 0 on a large product ignores what c held (NaN) and leaves the columns past n alone, with a row stride wider than n")
    func betaZeroLargeStrided() {
        // Past 2¹⁴ outputs the binding clears c itself and asks OpenBLAS for beta 1: every output
        // must still be the product alone, and the padding of each row must keep its value.
        func check<Scalar: TensorScalar>(_: Scalar.Type) {
            let (m, n, k) = (131, 127, 9)
            var generator = SeededGenerator(seed: 7)
            let a = (0..<m * k).map { _ in Scalar(generator.uniform(-1, 1)) }
            let b = (0..<k * n).map { _ in Scalar(generator.uniform(-1, 1)) }
            for ldc in [n, n + 3] {
                var c = [Scalar](repeating: .nan, count: m * ldc)
                for row in 0..<m { for column in n..<ldc { c[row * ldc + column] = 5 } }
                Scalar.blasGemm(
                    transposeA: false, transposeB: false, m: m, n: n, k: k, alpha: 1, a: a, lda: k, b: b, ldb: n, beta: 0, c: &c, ldc: ldc)
                var worst = Scalar(0), padding = true
                for row in 0..<m {
                    for column in 0..<n {
                        var sum = Scalar(0)
                        for i in 0..<k { sum += a[row * k + i] * b[i * n + column] }
                        let error = abs(c[row * ldc + column] - sum)
                        worst = error.isNaN ? .infinity : max(worst, error)
                    }
                    for column in n..<ldc where c[row * ldc + column] != 5 { padding = false }
                }
                #expect(worst < 1e-5, "ldc \(ldc): largest error \(worst)")
                #expect(padding, "ldc \(ldc): a column past n was written")
            }
        }
        check(Float.self)
        check(Double.self)
    }
}
