// Whole-buffer scaling through BLAS scal, with its one-loop reference underneath.

extension Tensor {
    /// `x *= alpha`, element by element (BLAS scal). With `alpha = 0` the result is exactly zero.
    public static func scale(by alpha: Scalar, _ x: inout Tensor) {
        guard x.count > 0 else { return }
        if alpha == 0 { x.zero(); return }  // BLAS scal may keep NaN * 0; gemm's beta = 0 means "ignore".
        x.scalars.withUnsafeMutableBufferPointer { px in
            Scalar.blasScal(n: px.count, alpha: alpha, x: px.baseAddress!)
        }
    }
}

extension Naive {
    /// One loop: the definition of ``Tensor/scale(by:_:)``.
    public static func scale<Scalar>(by alpha: Scalar, _ x: inout Tensor<Scalar>) {
        for i in 0..<x.count { x[i] = alpha == 0 ? 0 : alpha * x[i] }
    }
}
