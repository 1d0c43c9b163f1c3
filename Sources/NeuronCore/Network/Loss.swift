// The losses the network's head can compute. Their fused loops (value and gradient in one pass)
// are in `Kernels/LossKernels.swift`, with the definitions the tests check them against.

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
