// The losses the network's head can compute. Their fused loops (value and gradient in one pass)
// are in `Kernels/LossKernels.swift`, with the definitions the tests check them against.

/// How far a batch's outputs are from its targets, averaged over the batch (over its counted
/// positions, for a sequence).
public enum Loss: String, Sendable, Codable, CaseIterable, CustomStringConvertible {
    /// `Σⱼ (yⱼ - tⱼ)² / 2` per sample, mean over the batch: the single neuron's loss.
    case halfSquaredError
    /// `-Σⱼ tⱼ · log softmax(z)ⱼ` per sample, mean over the batch, computed from the logits `z`
    /// with a log-sum-exp shifted by the row maximum so that it never overflows. The network's
    /// output is then `softmax(z)`: the loss head applies it (see ``Activation/softmax``).
    case softmaxCrossEntropy
    /// `-log softmax(z)[target]` at every position of every sequence, mean over the counted
    /// positions: PyTorch's `cross_entropy` with `ignore_index` and mean reduction, for a next-token
    /// model. The last layer gives logits `(batch, time, vocabulary)` (an identity activation, or
    /// none); the targets are `(batch, time)` class indices stored as scalars, and a negative
    /// index marks padding, which counts for nothing. A batch with no counted position has loss 0
    /// and zero gradient. The network's output is then the softmax at every position: the loss
    /// head applies it.
    case sequenceCrossEntropy

    public var description: String { rawValue }
}
