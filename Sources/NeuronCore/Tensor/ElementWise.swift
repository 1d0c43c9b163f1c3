// Element-wise kernels: tanh and its derivative from the saved output, the bias broadcast and
// its adjoint, the column sum. Flat loops over contiguous storage; one pointer access per kernel.

extension Tensor {
    /// `y = tanh(x)`, element by element, with the C library's tanh.
    ///
    ///     // x: any shape  y: the same shape
    ///
    /// - Throws: ``TensorError/shapeMismatch(operation:left:right:expected:)`` naming both shapes.
    @_specialize(exported: true, where Scalar == Float)
    @_specialize(exported: true, where Scalar == Double)
    @_specialize(where Scalar == Float)
    @_specialize(where Scalar == Double)
    public static func tanh(_ x: Tensor, into y: inout Tensor) throws(TensorError) {
        try checkSameShape(x, y, operation: "tanh")
        x.scalars.withUnsafeBufferPointer { px in
            y.scalars.withUnsafeMutableBufferPointer { py in
                for i in px.indices { py[i] = Scalar.tanh(px[i]) }
            }
        }
    }

    /// `d = 1 - y*y`: tanh's derivative taken from its saved output `y`, never recomputing tanh.
    ///
    ///     // y: any shape  d: the same shape
    ///
    /// - Throws: ``TensorError/shapeMismatch(operation:left:right:expected:)`` naming both shapes.
    @_specialize(exported: true, where Scalar == Float)
    @_specialize(exported: true, where Scalar == Double)
    @_specialize(where Scalar == Float)
    @_specialize(where Scalar == Double)
    public static func tanhDerivative(output y: Tensor, into d: inout Tensor) throws(TensorError) {
        try checkSameShape(y, d, operation: "tanhDerivative")
        y.scalars.withUnsafeBufferPointer { py in
            d.scalars.withUnsafeMutableBufferPointer { pd in
                for i in py.indices { pd[i] = 1 - py[i] * py[i] }
            }
        }
    }

    /// `dx = dy * (1 - y*y)`: the chain rule through tanh, from the saved output `y`.
    ///
    ///     // y: any shape  dy: the same shape  dx: the same shape
    ///
    /// - Throws: ``TensorError/shapeMismatch(operation:left:right:expected:)`` naming both shapes.
    @_specialize(exported: true, where Scalar == Float)
    @_specialize(exported: true, where Scalar == Double)
    @_specialize(where Scalar == Float)
    @_specialize(where Scalar == Double)
    public static func tanhBackward(output y: Tensor, gradient dy: Tensor, into dx: inout Tensor) throws(TensorError) {
        try checkSameShape(y, dy, operation: "tanhBackward")
        try checkSameShape(y, dx, operation: "tanhBackward output")
        y.scalars.withUnsafeBufferPointer { py in
            dy.scalars.withUnsafeBufferPointer { pdy in
                dx.scalars.withUnsafeMutableBufferPointer { pdx in
                    for i in py.indices { pdx[i] = pdy[i] * (1 - py[i] * py[i]) }
                }
            }
        }
    }

    /// Adds the bias row `b` to every row of `x`.
    ///
    ///     // x: (batch, features)  b: (features)
    ///
    /// - Throws: ``TensorError/shapeMismatch(operation:left:right:expected:)`` naming both shapes.
    @_specialize(exported: true, where Scalar == Float)
    @_specialize(exported: true, where Scalar == Double)
    @_specialize(where Scalar == Float)
    @_specialize(where Scalar == Double)
    public static func addBias(_ b: Tensor, to x: inout Tensor) throws(TensorError) {
        try checkBias(x, b, operation: "addBias")
        let columns = x.columns
        b.scalars.withUnsafeBufferPointer { pb in
            x.scalars.withUnsafeMutableBufferPointer { px in
                var start = 0
                while start < px.count {
                    for j in 0..<columns { px[start + j] += pb[j] }
                    start += columns
                }
            }
        }
    }

    /// `b = sum over rows of x` (or `b +=` with `accumulate`): the adjoint of ``addBias(_:to:)``,
    /// which is how a bias gradient is formed from a batch.
    ///
    ///     // x: (batch, features)  b: (features)
    ///
    /// - Throws: ``TensorError/shapeMismatch(operation:left:right:expected:)`` naming both shapes.
    @_specialize(exported: true, where Scalar == Float)
    @_specialize(exported: true, where Scalar == Double)
    @_specialize(where Scalar == Float)
    @_specialize(where Scalar == Double)
    public static func sumColumns(_ x: Tensor, into b: inout Tensor, accumulate: Bool = false) throws(TensorError) {
        try checkBias(x, b, operation: "sumColumns")
        if !accumulate { b.zero() }
        let columns = x.columns
        x.scalars.withUnsafeBufferPointer { px in
            b.scalars.withUnsafeMutableBufferPointer { pb in
                // Row after row keeps the reads sequential; each column's sum runs down the rows in order.
                var start = 0
                while start < px.count {
                    for j in 0..<columns { pb[j] += px[start + j] }
                    start += columns
                }
            }
        }
    }

    static func checkBias(_ x: Tensor, _ b: Tensor, operation: String) throws(TensorError) {
        guard x.rank == 2, b.rank == 1, b.count == x.columns else {
            throw .shapeMismatch(operation: operation, left: x.shape, right: b.shape,
                                 expected: "a (batch, features) matrix and a (features) vector")
        }
    }
}

extension Naive {
    /// The definition of ``Tensor/addBias(_:to:)``: `x[i, j] += b[j]`.
    public static func addBias<Scalar>(_ b: Tensor<Scalar>, to x: inout Tensor<Scalar>) throws(TensorError) {
        try Tensor.checkBias(x, b, operation: "addBias")
        for i in 0..<x.rows { for j in 0..<x.columns { x[i, j] += b[j] } }
    }

    /// The definition of ``Tensor/sumColumns(_:into:accumulate:)``: one column at a time.
    public static func sumColumns<Scalar>(_ x: Tensor<Scalar>, into b: inout Tensor<Scalar>, accumulate: Bool = false) throws(TensorError) {
        try Tensor.checkBias(x, b, operation: "sumColumns")
        for j in 0..<x.columns {
            var sum: Scalar = accumulate ? b[j] : 0
            for i in 0..<x.rows { sum += x[i, j] }
            b[j] = sum
        }
    }
}
