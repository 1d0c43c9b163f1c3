// The matrix product: BLAS gemm with shape checks at the door, and under it the three plain
// loops that define it (the tests' oracle).

/// Reference implementations: slow, obviously right, and the oracle every fast path is tested
/// and benchmarked against. Same signatures as the fast operations on ``Tensor``.
public enum Naive {}

extension Tensor {
    /// `c = alpha * op(a) * op(b) + beta * c`, where `op` transposes when asked (BLAS gemm).
    ///
    ///     // op(a): (m, k)  op(b): (k, n)  c: (m, n)
    ///
    /// With `beta = 0` the previous contents of `c` are ignored (even NaN); with `beta = 1` the
    /// product is accumulated into `c`, which is how backward passes add into gradient buffers.
    /// - Throws: ``TensorError/shapeMismatch(operation:left:right:expected:)`` naming both operand
    ///   shapes when the inner dimensions differ, or naming `c`'s shape when it is not (m, n).
    public static func matmul(
        _ a: Tensor, transposeA: Bool = false,
        _ b: Tensor, transposeB: Bool = false,
        alpha: Scalar = 1, beta: Scalar = 0,
        into c: inout Tensor
    ) throws(TensorError) {
        let (m, n, k) = try productShape(a, transposeA, b, transposeB, c)
        guard m > 0, n > 0 else { return }
        guard k > 0 else { scale(by: beta, &c); return }
        a.scalars.withUnsafeBufferPointer { pa in
            b.scalars.withUnsafeBufferPointer { pb in
                c.scalars.withUnsafeMutableBufferPointer { pc in
                    Scalar.blasGemm(
                        transposeA: transposeA, transposeB: transposeB, m: m, n: n, k: k,
                        alpha: alpha, a: pa.baseAddress!, lda: a.columns,
                        b: pb.baseAddress!, ldb: b.columns,
                        beta: beta, c: pc.baseAddress!, ldc: n)
                }
            }
        }
    }

    /// `op(a) * op(b)` in a new tensor (allocates; training loops use the `into:` form).
    /// - Throws: ``TensorError/shapeMismatch(operation:left:right:expected:)`` naming both shapes.
    public static func matmul(
        _ a: Tensor, transposeA: Bool = false,
        _ b: Tensor, transposeB: Bool = false
    ) throws(TensorError) -> Tensor {
        try checkMatrices(a, b, operation: "matmul")
        var c = Tensor(zeros: [transposeA ? a.columns : a.rows, transposeB ? b.rows : b.columns])
        try matmul(a, transposeA: transposeA, b, transposeB: transposeB, into: &c)
        return c
    }

    /// Checks the operands of a product and returns `(m, n, k)`.
    static func productShape(
        _ a: Tensor, _ transposeA: Bool, _ b: Tensor, _ transposeB: Bool, _ c: Tensor
    ) throws(TensorError) -> (m: Int, n: Int, k: Int) {
        try checkMatrices(a, b, operation: "matmul")
        let (m, k) = transposeA ? (a.columns, a.rows) : (a.rows, a.columns)
        let (kb, n) = transposeB ? (b.columns, b.rows) : (b.rows, b.columns)
        guard k == kb else {
            throw .shapeMismatch(
                operation: "matmul", left: a.shape, right: b.shape,
                expected: "inner dimensions of \(transposeA ? "aᵀ" : "a") and \(transposeB ? "bᵀ" : "b") are \(k) and \(kb)")
        }
        guard c.isMatrix(rows: m, columns: n) else {
            throw .shapeMismatch(
                operation: "matmul output", left: c.shape, right: [m, n],
                expected: "the output must have the product's shape \(TensorError.format([m, n]))")
        }
        return (m, n, k)
    }

    private static func checkMatrices(_ a: Tensor, _ b: Tensor, operation: String) throws(TensorError) {
        guard a.rank == 2, b.rank == 2 else {
            throw .shapeMismatch(operation: operation, left: a.shape, right: b.shape, expected: "both operands must be matrices (rank 2)")
        }
    }
}

extension Naive {
    /// Three plain loops: the definition of ``Tensor/matmul(_:transposeA:_:transposeB:alpha:beta:into:)``.
    public static func matmul<Scalar>(
        _ a: Tensor<Scalar>, transposeA: Bool = false,
        _ b: Tensor<Scalar>, transposeB: Bool = false,
        alpha: Scalar = 1, beta: Scalar = 0,
        into c: inout Tensor<Scalar>
    ) throws(TensorError) {
        let (m, n, k) = try Tensor.productShape(a, transposeA, b, transposeB, c)
        for i in 0..<m {
            for j in 0..<n {
                var sum: Scalar = 0
                for p in 0..<k {
                    let aip = transposeA ? a[p, i] : a[i, p]
                    let bpj = transposeB ? b[j, p] : b[p, j]
                    sum += aip * bpj
                }
                c[i, j] = alpha * sum + (beta == 0 ? 0 : beta * c[i, j])
            }
        }
    }
}
