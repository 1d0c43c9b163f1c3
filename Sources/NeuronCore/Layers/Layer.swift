/// A stage of a network: a function of a batch and of its own parameters, with its backward pass.
///
/// A layer owns no parameters: the network keeps every layer's parameters in one contiguous
/// buffer (and gradients in another of the same layout) and hands each layer its slice, so
/// optimizers update everything in one flat loop. A layer owns its caches: what forward keeps
/// for backward, sized when a batch shape is first seen and reused after.
public protocol Layer<Scalar>: Sendable, CustomStringConvertible {
    associatedtype Scalar: TensorScalar

    /// Features per sample going in.
    var inputSize: Int { get }
    /// Features per sample coming out.
    var outputSize: Int { get }
    /// The non-linearity at the output (it decides the initialisation and the loss it may feed).
    var activation: Activation { get }
    /// The parameter tensors, in buffer order, e.g. `[("weight", [in, out]), ("bias", [out])]`.
    var parameterShapes: [(name: String, shape: [Int])] { get }

    /// Fills this layer's parameter slice with seeded initial values.
    func initialize(_ parameters: UnsafeMutableBufferPointer<Scalar>, using generator: inout SeededGenerator)

    /// Runs the layer on a batch and keeps ``output`` (and whatever backward needs).
    ///
    ///     // x: (batch, inputSize)  →  output: (batch, outputSize)
    mutating func forward(_ x: Tensor<Scalar>, parameters: UnsafeBufferPointer<Scalar>)
    /// The last forward pass's output.
    var output: Tensor<Scalar> { get }
    /// The pre-activation of a softmax output (the logits), kept for the fused cross-entropy; nil otherwise.
    var logits: Tensor<Scalar>? { get }

    /// Adds this batch's parameter gradients into `gradients` (cleared once per step by the
    /// network) and, only when asked, computes ``inputGradient``.
    ///
    ///     // x: (batch, inputSize)  dy: (batch, outputSize)  →  gradients += …, inputGradient: (batch, inputSize)
    ///
    /// `dy` is the loss's gradient with respect to ``output``, except after a softmax, where the
    /// fused loss hands over the gradient with respect to the logits.
    mutating func backward(
        input x: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>,
        parameters: UnsafeBufferPointer<Scalar>, gradients: UnsafeMutableBufferPointer<Scalar>,
        computeInputGradient: Bool)
    /// The last backward pass's gradient with respect to the layer's input (when it was asked for).
    var inputGradient: Tensor<Scalar> { get }

    /// The same layer computing in another precision, with empty caches.
    func converted<Other: TensorScalar>(to: Other.Type) -> any Layer<Other>
}

extension Layer {
    /// The number of scalars in this layer's parameter slice.
    public var parameterCount: Int { parameterShapes.reduce(0) { $0 + $1.shape.reduce(1, *) } }
}
