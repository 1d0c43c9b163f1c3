// Losses: a value for the batch and the gradient that starts backward, both in one pass.

/// How far a batch's outputs are from its targets, averaged over the batch.
public enum Loss: String, Sendable, Codable, CaseIterable, CustomStringConvertible {
    /// `Σⱼ (yⱼ - tⱼ)² / 2` per sample, mean over the batch: the single neuron's loss.
    case halfSquaredError
    /// `-Σⱼ tⱼ · log softmax(z)ⱼ` per sample, mean over the batch, computed from the logits `z`
    /// with a log-sum-exp shifted by the row maximum so that it never overflows.
    case softmaxCrossEntropy

    public var description: String { rawValue }

    /// The batch's loss, and its gradient for backward in `gradient`: with respect to the
    /// output for half-squared-error (`(y - t) / batch`), with respect to the logits for
    /// softmax cross-entropy (`(p - t) / batch`, the fused form).
    ///
    ///     // output, targets, gradient: (batch, outputs)  logits: (batch, outputs), cross-entropy only
    @_specialize(exported: true, where Scalar == Float)
    @_specialize(exported: true, where Scalar == Double)
    @_specialize(where Scalar == Float)
    @_specialize(where Scalar == Double)
    func evaluate<Scalar: TensorScalar>(
        output y: Tensor<Scalar>, logits z: Tensor<Scalar>?, targets t: Tensor<Scalar>,
        gradient dy: inout Tensor<Scalar>?
    ) -> Scalar {
        let batch = Scalar(y.rows), columns = y.columns
        var total: Scalar = 0
        var gradient = dy ?? Tensor(zeros: [0, 0])
        let wantsGradient = dy != nil
        dy = nil  // hand the buffer over without a second reference, so writing into it never copies
        if wantsGradient { gradient.resize(to: y.shape) }
        y.withUnsafeBufferPointer { py in
            t.withUnsafeBufferPointer { pt in
                gradient.withUnsafeMutableBufferPointer { pg in
                    switch self {
                    case .halfSquaredError:
                        for i in py.indices {
                            let error = py[i] - pt[i]
                            total += error * error / 2
                            if wantsGradient { pg[i] = error / batch }
                        }
                    case .softmaxCrossEntropy:
                        z!.withUnsafeBufferPointer { pz in
                            var row = 0
                            while row < pz.count {
                                var maximum = -Scalar.infinity
                                for j in row ..< row + columns where pz[j] > maximum { maximum = pz[j] }
                                var sum: Scalar = 0
                                for j in row ..< row + columns { sum += Scalar.exp(pz[j] - maximum) }
                                let logSumExp = maximum + Scalar.log(sum)
                                for j in row ..< row + columns where pt[j] != 0 { total += pt[j] * (logSumExp - pz[j]) }
                                if wantsGradient {
                                    for j in row ..< row + columns { pg[j] = (py[j] - pt[j]) / batch }
                                }
                                row += columns
                            }
                        }
                    }
                }
            }
        }
        if wantsGradient { dy = gradient }
        return total / batch
    }
}
