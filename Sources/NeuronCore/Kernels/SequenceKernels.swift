// The sequence layers' loops: an embedding's row lookups and the scatter-add that is their
// adjoint, a context window's copies and their sum back, and the check that a buffer holds
// indices (tokens at the network's door, class indices in the sequence loss's targets). Token and
// class indices travel as scalars, exact below 2^24 in Float. The naive definitions are beside
// the layers (Layers/Embedding.swift, Layers/ContextWindow.swift).

extension Kernels {
    /// Copies row `x[r]` of `table` into row `r` of `y`: an embedding lookup.
    ///
    ///     // x: (rows) token indices  table: (vocabulary, columns)  y: (rows, columns)
    ///
    /// - Precondition: every index is a whole number in `0..<vocabulary` (the network checks
    ///   tokens at its door, ``firstNonIndex(_:below:negativesAllowed:)``).
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func gatherRows<T: TensorScalar>(
        _ table: UnsafeBufferPointer<T>, columns: Int, indices x: UnsafeBufferPointer<T>, into y: UnsafeMutableBufferPointer<T>
    ) {
        // x: (rows)  table: (vocabulary, columns)  y: (rows, columns)
        guard columns > 0, let from = table.baseAddress, let to = y.baseAddress else { return }
        let vocabulary = table.count / columns, upper = T(vocabulary)
        for r in 0..<x.count {
            let token = x[r]
            precondition(token >= 0 && token < upper, "token index \(token) outside 0..<\(vocabulary)")
            (to + r * columns).update(from: from + Int(token) * columns, count: columns)
        }
    }

    /// Adds row `r` of `dy` into row `x[r]` of `table`: the adjoint of
    /// ``gatherRows(_:columns:indices:into:)``, an embedding's weight gradient. A token that
    /// appears twice gets both rows.
    ///
    ///     // x: (rows) token indices  dy: (rows, columns)  table: (vocabulary, columns)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func scatterAddRows<T: TensorScalar>(
        _ dy: UnsafeBufferPointer<T>, columns: Int, indices x: UnsafeBufferPointer<T>, into table: UnsafeMutableBufferPointer<T>
    ) {
        // x: (rows)  dy: (rows, columns)  table: (vocabulary, columns)
        guard columns > 0, let from = dy.baseAddress, let to = table.baseAddress else { return }
        let vocabulary = table.count / columns, upper = T(vocabulary)
        for r in 0..<x.count {
            let token = x[r]
            precondition(token >= 0 && token < upper, "token index \(token) outside 0..<\(vocabulary)")
            let source = from + r * columns, row = to + Int(token) * columns
            for j in 0..<columns { row[j] += source[j] }
        }
    }

    /// Each position's window of the last `size` positions, oldest first, zeros before position 0:
    /// `y[b, t, j·features ..< (j + 1)·features] = x[b, t - size + 1 + j]`.
    ///
    ///     // x: (batch, time, features)  y: (batch, time, size · features)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func contextWindowForward<T: TensorScalar>(
        _ x: UnsafeBufferPointer<T>, time: Int, features: Int, size: Int, into y: UnsafeMutableBufferPointer<T>
    ) {
        // x: (batch, time, features)  y: (batch, time, size · features)
        guard features > 0, time > 0, let xs = x.baseAddress, let ys = y.baseAddress else { return }
        let width = size * features
        for sample in 0..<x.count / (time * features) {
            let xb = xs + sample * time * features, yb = ys + sample * time * width
            for t in 0..<time {
                for j in 0..<size {
                    let source = t - size + 1 + j, slice = yb + t * width + j * features
                    if source >= 0 {
                        slice.update(from: xb + source * features, count: features)
                    } else {
                        slice.update(repeating: 0, count: features)
                    }
                }
            }
        }
    }

    /// The adjoint of ``contextWindowForward(_:time:features:size:into:)``: every slice of `dy`
    /// summed back into the position it was copied from, `dx` overwritten.
    ///
    ///     // dy: (batch, time, size · features)  dx: (batch, time, features)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func contextWindowBackward<T: TensorScalar>(
        _ dy: UnsafeBufferPointer<T>, time: Int, features: Int, size: Int, into dx: UnsafeMutableBufferPointer<T>
    ) {
        // dy: (batch, time, size · features)  dx: (batch, time, features)
        guard features > 0, time > 0, let ds = dy.baseAddress, let xs = dx.baseAddress else { return }
        let width = size * features
        dx.update(repeating: 0)
        for sample in 0..<dx.count / (time * features) {
            let xb = xs + sample * time * features, db = ds + sample * time * width
            for t in 0..<time {
                // Slice j of position t came from position t - size + 1 + j; the zeros before 0 take nothing back.
                for j in max(0, size - 1 - t)..<size {
                    let row = xb + (t - size + 1 + j) * features, slice = db + t * width + j * features
                    for i in 0..<features { row[i] += slice[i] }
                }
            }
        }
    }

    /// The first entry of `x` that is not an index: a whole number in `0..<upperBound` or, when
    /// `negativesAllowed` (padding in a sequence's targets), any negative whole number; nil when
    /// every entry is one. NaN and infinities are never indices.
    ///
    ///     // x: (n)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func firstNonIndex<T: TensorScalar>(_ x: UnsafeBufferPointer<T>, below upperBound: Int, negativesAllowed: Bool) -> Int? {
        // x: (n)
        let upper = T(upperBound)
        for i in 0..<x.count {
            let v = x[i]
            guard v.isFinite, v == v.rounded(.towardZero), v < upper, v >= 0 || negativesAllowed else { return i }
        }
        return nil
    }
}
