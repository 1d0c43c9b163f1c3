// Whole-buffer vector operations: BLAS axpy and scal (what optimizers run over parameters),
// each with its one-loop reference underneath.

extension Tensor {
    /// `y += alpha * x`, element by element (BLAS axpy).
    ///
    ///     // x: any shape  y: the same shape
    ///
    /// - Throws: ``TensorError/shapeMismatch(operation:left:right:expected:)`` naming both shapes.
    @_specialize(exported: true, where Scalar == Float)
    @_specialize(exported: true, where Scalar == Double)
    @_specialize(where Scalar == Float)
    @_specialize(where Scalar == Double)
    public static func axpy(_ alpha: Scalar, _ x: Tensor, into y: inout Tensor) throws(TensorError) {
        try checkSameShape(x, y, operation: "axpy")
        guard x.count > 0 else { return }
        x.scalars.withUnsafeBufferPointer { px in
            y.scalars.withUnsafeMutableBufferPointer { py in
                Scalar.blasAxpy(n: px.count, alpha: alpha, x: px.baseAddress!, y: py.baseAddress!)
            }
        }
    }

    /// `x *= alpha`, element by element (BLAS scal). With `alpha = 0` the result is exactly zero.
    @_specialize(exported: true, where Scalar == Float)
    @_specialize(exported: true, where Scalar == Double)
    @_specialize(where Scalar == Float)
    @_specialize(where Scalar == Double)
    public static func scale(by alpha: Scalar, _ x: inout Tensor) {
        guard x.count > 0 else { return }
        if alpha == 0 { x.zero(); return }  // BLAS scal may keep NaN * 0; gemm's beta = 0 means "ignore".
        x.scalars.withUnsafeMutableBufferPointer { px in
            Scalar.blasScal(n: px.count, alpha: alpha, x: px.baseAddress!)
        }
    }

    static func checkSameShape(_ x: Tensor, _ y: Tensor, operation: String) throws(TensorError) {
        guard x.shape == y.shape else {
            throw .shapeMismatch(operation: operation, left: x.shape, right: y.shape, expected: "the shapes must be equal")
        }
    }
}

extension Naive {
    /// One loop: the definition of ``Tensor/axpy(_:_:into:)``.
    public static func axpy<Scalar>(_ alpha: Scalar, _ x: Tensor<Scalar>, into y: inout Tensor<Scalar>) throws(TensorError) {
        try Tensor.checkSameShape(x, y, operation: "axpy")
        for i in 0..<x.count { y[i] += alpha * x[i] }
    }

    /// One loop: the definition of ``Tensor/scale(by:_:)``.
    public static func scale<Scalar>(by alpha: Scalar, _ x: inout Tensor<Scalar>) {
        for i in 0..<x.count { x[i] = alpha == 0 ? 0 : alpha * x[i] }
    }
}
