// Losses: a value for the batch and the gradient that starts backward, both in one pass; the
// network's loss head calls them once per step. Under them, in `Naive`, each loss's definition.

extension Kernels {
    /// `Σ (y - t)² / 2 / batch`, and, when `gradient` is given, `(y - t) / batch` into it.
    ///
    ///     // y, t, gradient: (batch, outputs)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func halfSquaredError<T: TensorScalar>(
        output y: UnsafeBufferPointer<T>, targets t: UnsafeBufferPointer<T>, batch: Int,
        gradient: UnsafeMutableBufferPointer<T>?
    ) -> T {
        // y, t, gradient: (batch, outputs)
        let batch = T(batch)
        var total: T = 0
        if let g = gradient {
            for i in y.indices {
                let error = y[i] - t[i]
                total += error * error / 2
                g[i] = error / batch
            }
        } else {
            for i in y.indices {
                let error = y[i] - t[i]
                total += error * error / 2
            }
        }
        return total / batch
    }

    /// `-Σ t · log softmax(z) / batch` from the logits by a shifted log-sum-exp, and, when
    /// `gradient` is given, the fused gradient with respect to the logits, `(p - t) / batch`,
    /// from the probabilities `p = softmax(z)`.
    ///
    ///     // z, p, t, gradient: (batch, columns)
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func softmaxCrossEntropy<T: TensorScalar>(
        logits z: UnsafeBufferPointer<T>, probabilities p: UnsafeBufferPointer<T>,
        targets t: UnsafeBufferPointer<T>, columns: Int, gradient: UnsafeMutableBufferPointer<T>?
    ) -> T {
        // z, p, t, gradient: (batch, columns)
        let batch = T(z.count / columns)
        var total: T = 0
        var row = 0
        while row < z.count {
            var maximum = -T.infinity
            for j in row..<row + columns where z[j] > maximum { maximum = z[j] }
            var sum: T = 0
            for j in row..<row + columns { sum += T.libmExp(z[j] - maximum) }
            let logSumExp = maximum + T.libmLog(sum)
            for j in row..<row + columns where t[j] != 0 { total += t[j] * (logSumExp - z[j]) }
            row += columns
        }
        if let g = gradient {
            for i in p.indices { g[i] = (p[i] - t[i]) / batch }
        }
        return total / batch
    }
}

extension Naive {
    /// The definition of each loss from the network's output `y` (probabilities for
    /// cross-entropy, whose value is then `-Σ t·log p`, with no log-sum-exp), mean over the batch.
    public static func loss<Scalar: TensorScalar>(_ loss: Loss, output y: Tensor<Scalar>, targets t: Tensor<Scalar>) -> Scalar {
        var total: Scalar = 0
        for n in 0..<y.rows {
            for j in 0..<y.columns {
                switch loss {
                case .halfSquaredError: total += (y[n, j] - t[n, j]) * (y[n, j] - t[n, j]) / 2
                case .softmaxCrossEntropy: if t[n, j] != 0 { total -= t[n, j] * Scalar.libmLog(y[n, j]) }
                }
            }
        }
        return total / Scalar(y.rows)
    }
}
