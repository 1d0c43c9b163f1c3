// Losses: a value for the batch and the gradient that starts backward, both in one pass. The
// loops are kernels of ``TensorScalar``; the network calls them once per step.

/// How far a batch's outputs are from its targets, averaged over the batch.
public enum Loss: String, Sendable, Codable, CaseIterable, CustomStringConvertible {
    /// `Σⱼ (yⱼ - tⱼ)² / 2` per sample, mean over the batch: the single neuron's loss.
    case halfSquaredError
    /// `-Σⱼ tⱼ · log softmax(z)ⱼ` per sample, mean over the batch, computed from the logits `z`
    /// with a log-sum-exp shifted by the row maximum so that it never overflows. The network's
    /// output is then `softmax(z)`: the loss head applies it (see ``Activation/softmax``).
    case softmaxCrossEntropy

    public var description: String { rawValue }
}

extension TensorScalar {
    @_specialize(where Self == Float)
    @_specialize(where Self == Double)
    public static func halfSquaredError(
        output y: UnsafeBufferPointer<Self>, targets t: UnsafeBufferPointer<Self>, batch: Int,
        gradient: UnsafeMutableBufferPointer<Self>?
    ) -> Self {
        // y, t, gradient: (batch, outputs)
        let batch = Self(batch)
        var total: Self = 0
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

    @_specialize(where Self == Float)
    @_specialize(where Self == Double)
    public static func softmaxCrossEntropy(
        logits z: UnsafeBufferPointer<Self>, probabilities p: UnsafeBufferPointer<Self>,
        targets t: UnsafeBufferPointer<Self>, columns: Int, gradient: UnsafeMutableBufferPointer<Self>?
    ) -> Self {
        // z, p, t, gradient: (batch, columns)
        let batch = Self(z.count / columns)
        var total: Self = 0
        var row = 0
        while row < z.count {
            var maximum = -Self.infinity
            for j in row..<row + columns where z[j] > maximum { maximum = z[j] }
            var sum: Self = 0
            for j in row..<row + columns { sum += exp(z[j] - maximum) }
            let logSumExp = maximum + log(sum)
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
                case .softmaxCrossEntropy: if t[n, j] != 0 { total -= t[n, j] * Scalar.log(y[n, j]) }
                }
            }
        }
        return total / Scalar(y.rows)
    }
}
