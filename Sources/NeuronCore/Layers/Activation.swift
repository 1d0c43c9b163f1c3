// The activations a layer applies at its output. Their loops, forward and backward, are in
// `Kernels/ActivationKernels.swift`, with the textbook definitions the tests check them against.

/// The non-linearity at a layer's output.
public enum Activation: String, Sendable, Codable, CaseIterable, CustomStringConvertible {
    /// `tanh(z)`: the neuron's, and the default (Float: a vectorized approximation within 4e-7, see ``TensorScalar/tanh(inPlace:)`` in `Tensor/VectorTanh.swift`).
    case tanh
    /// `1 / (1 + e^-z)`.
    case sigmoid
    /// `max(0, z)`.
    case relu
    /// `z` unchanged.
    case identity
    /// `e^zⱼ / Σₖ e^zₖ` over each row. Only at the output: the layer's output stays its logits
    /// `z`, and the network's loss head turns them into probabilities, fused with the
    /// cross-entropy, whose gradient with respect to the logits is simply `p - t`.
    case softmax

    public var description: String { rawValue }
}
