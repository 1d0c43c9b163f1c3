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

    /// The log-sum-exp of one row of logits, `m + log Σ e^(z - m)` with `m` the row's maximum,
    /// read from the row's softmax `p` rather than by a second exp of every logit: the sum is
    /// `1 / p[argmax]`, and `p[argmax] ≥ 1 / columns` never underflows. Within one rounding of
    /// the sum (`p[argmax]` is `1/sum` rounded), and one pass of exps where the loss head took two
    /// (Benchmarks/README.md, “Figures behind the code”: the log-sum-exp from the softmax).
    ///
    ///     // z, p: (rows, columns); the row starts at `row`
    @inline(__always)
    static func logSumExp<T: TensorScalar>(_ z: UnsafeBufferPointer<T>, _ p: UnsafeBufferPointer<T>, row: Int, columns: Int) -> T {
        var maximum = -T.infinity, at = row
        for j in row..<row + columns where z[j] > maximum { (maximum, at) = (z[j], j) }
        return maximum - T.libmLog(p[at])
    }

    /// `-Σ t · log softmax(z) / batch` from the logits by a shifted log-sum-exp (`logSumExp`,
    /// above), and, when `gradient` is given, the fused gradient with respect to the logits,
    /// `(p - t) / batch`, from the probabilities `p = softmax(z)`.
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
            let logSumExp = logSumExp(z, p, row: row, columns: columns)
            for j in row..<row + columns where t[j] != 0 { total += t[j] * (logSumExp - z[j]) }
            row += columns
        }
        if let g = gradient {
            for i in p.indices { g[i] = (p[i] - t[i]) / batch }
        }
        return total / batch
    }

    /// `-Σ log softmax(z)[t] / counted` over the rows whose class index `t` is not negative (the
    /// counted rows; a negative index is padding), from the logits by a shifted log-sum-exp
    /// (`logSumExp`, above), and,
    /// when `gradient` is given, `(p - onehot(t)) / counted` at the counted rows and 0 at the
    /// padding rows, from the probabilities `p = softmax(z)`. With no counted row the loss is 0 and
    /// the gradient zero.
    ///
    ///     // z, p, gradient: (rows, columns)  t: (rows), rows = batch · time, columns = vocabulary
    @_specialize(where T == Float)
    @_specialize(where T == Double)
    public static func sequenceCrossEntropy<T: TensorScalar>(
        logits z: UnsafeBufferPointer<T>, probabilities p: UnsafeBufferPointer<T>,
        targets t: UnsafeBufferPointer<T>, columns: Int, gradient: UnsafeMutableBufferPointer<T>?
    ) -> T {
        // z, p, gradient: (rows, columns)  t: (rows): a class index per row, negative for padding
        var counted = 0
        for target in t where target >= 0 { counted += 1 }
        let n = T(Swift.max(counted, 1))  // no counted row: a total of 0 and a gradient of zeros either way
        var total: T = 0
        for r in 0..<t.count where t[r] >= 0 {
            let row = r * columns
            total += logSumExp(z, p, row: row, columns: columns) - z[row + Int(t[r])]
        }
        if let g = gradient {
            for r in 0..<t.count {
                let row = r * columns
                if t[r] < 0 {
                    for j in row..<row + columns { g[j] = 0 }
                } else {
                    for j in row..<row + columns { g[j] = p[j] / n }
                    let target = row + Int(t[r])
                    g[target] = (p[target] - 1) / n
                }
            }
        }
        return total / n
    }
}

extension Naive {
    /// The definition of each loss from the network's output `y` (probabilities for
    /// cross-entropy, whose value is then `-Σ t·log p`, with no log-sum-exp), mean over the batch;
    /// for a sequence, `-Σ log p[target]` over the positions whose target is not negative, mean
    /// over those positions (0 when there are none).
    ///
    ///     // y, t: (batch, outputs); for a sequence, y: (batch, time, vocabulary)  t: (batch, time)
    public static func loss<Scalar: TensorScalar>(_ loss: Loss, output y: Tensor<Scalar>, targets t: Tensor<Scalar>) -> Scalar {
        if loss == .sequenceCrossEntropy {
            let vocabulary = y.shape[y.rank - 1]
            var total: Scalar = 0, counted = 0
            for position in 0..<t.count where t[position] >= 0 {
                total -= Scalar.libmLog(y[position * vocabulary + Int(t[position])])
                counted += 1
            }
            return counted == 0 ? 0 : total / Scalar(counted)
        }
        var total: Scalar = 0
        for n in 0..<y.rows {
            for j in 0..<y.columns {
                switch loss {
                case .halfSquaredError: total += (y[n, j] - t[n, j]) * (y[n, j] - t[n, j]) / 2
                case .softmaxCrossEntropy: if t[n, j] != 0 { total -= t[n, j] * Scalar.libmLog(y[n, j]) }
                case .sequenceCrossEntropy: break  // above
                }
            }
        }
        return total / Scalar(y.rows)
    }
}
