// The generic bodies of the element-wise and reduction kernels of ``TensorScalar`` (see
// `TensorScalar.swift`): flat loops over contiguous storage, specialized by the compiler for each
// conformance. Under each, in `Naive`, its definition written out plainly, for the tests.
//
// Every public kernel of the seam (here and beside its layer) carries `@_specialize` for Float and
// Double. Inside the module the layers get specialized copies anyway; a caller in another module
// reaches the generic body, which then checks the type and jumps to the copy. Without it, relu over
// conv 1's 1.38M outputs called from another module took 34.7 ms instead of 0.24 ms (addBias 12.0 →
// 0.35 ms, relu's backward 53.8 → 0.37 ms).

extension TensorScalar {
    // addBias and addColumnSums walk the rows through pointers, without overflow checks, so that
    // each row's loop vectorizes (5× faster than buffer subscripts on a conv layer's output).
    @_specialize(where Self == Float)
    @_specialize(where Self == Double)
    public static func addBias(_ b: UnsafeBufferPointer<Self>, to y: UnsafeMutableBufferPointer<Self>) {
        // y: (rows, columns)  b: (columns)
        let columns = b.count
        guard columns > 0, let bs = b.baseAddress, let ys = y.baseAddress else { return }
        for row in stride(from: 0, to: y.count, by: columns) {
            let yr = ys + row
            for j in 0..<columns { yr[j] += bs[j] }
        }
    }

    @_specialize(where Self == Float)
    @_specialize(where Self == Double)
    public static func addColumnSums(_ x: UnsafeBufferPointer<Self>, to b: UnsafeMutableBufferPointer<Self>) {
        // x: (rows, columns)  b: (columns)
        // Row after row keeps the reads sequential; each column's sum runs down the rows in order.
        let columns = b.count
        guard columns > 0, let xs = x.baseAddress, let bs = b.baseAddress else { return }
        for row in stride(from: 0, to: x.count, by: columns) {
            let xr = xs + row
            for j in 0..<columns { bs[j] += xr[j] }
        }
    }

    @_specialize(where Self == Float)
    @_specialize(where Self == Double)
    public static func gatherRows(
        _ source: UnsafeBufferPointer<Self>, columns: Int, order: UnsafeBufferPointer<Int>, positions: Range<Int>,
        into batch: UnsafeMutableBufferPointer<Self>
    ) {
        // source: (count, columns)  batch: (positions.count, columns); batch row i = source row order[positions.lowerBound + i]
        guard columns > 0, let from = source.baseAddress, let to = batch.baseAddress else { return }
        for (i, position) in positions.enumerated() {
            (to + i * columns).update(from: from + order[position] * columns, count: columns)
        }
    }

    @_specialize(where Self == Float)
    @_specialize(where Self == Double)
    public static func argmax(_ row: UnsafeBufferPointer<Self>) -> Int {
        guard !row.isEmpty else { return 0 }
        var best = 0
        var bestValue = row[0]
        for j in 1..<row.count where row[j] > bestValue {
            best = j
            bestValue = row[j]
        }
        return best
    }

    @_specialize(where Self == Float)
    @_specialize(where Self == Double)
    public static func sumOfSquares(_ x: UnsafeBufferPointer<Self>) -> Double {
        var sum = 0.0
        for v in x { sum += Double(v) * Double(v) }
        return sum
    }

    @_specialize(where Self == Float)
    @_specialize(where Self == Double)
    public static func countMagnitudes(_ x: UnsafeBufferPointer<Self>, above threshold: Self) -> Int {
        var above = 0
        for v in x where abs(v) > threshold { above += 1 }
        return above
    }

    @_specialize(where Self == Float)
    @_specialize(where Self == Double)
    public static func containsNonFinite(_ x: UnsafeBufferPointer<Self>) -> Bool {
        x.contains { !$0.isFinite }
    }
}

extension Naive {
    /// The definition of ``TensorScalar/addBias(_:to:)``: `y[i, j] += b[j]`, through subscripts.
    public static func addBias<Scalar>(_ b: Tensor<Scalar>, to y: inout Tensor<Scalar>) {
        for i in 0..<y.rows { for j in 0..<y.columns { y[i, j] += b[j] } }
    }

    /// The definition of ``TensorScalar/addColumnSums(_:to:)``: one column at a time.
    public static func addColumnSums<Scalar>(_ x: Tensor<Scalar>, to b: inout Tensor<Scalar>) {
        for j in 0..<x.columns {
            var sum = b[j]
            for i in 0..<x.rows { sum += x[i, j] }
            b[j] = sum
        }
    }
}
