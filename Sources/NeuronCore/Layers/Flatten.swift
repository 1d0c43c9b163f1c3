// Flatten: an image becomes a vector of features for the dense layers after it. The engine keeps
// images channels-last, but the vector is laid out channels-first, `(channel, row, column)`, the
// order PyTorch's `nn.Flatten` gives an NCHW tensor: so the dense weight after a flatten means
// the same in our checkpoints as in PyTorch's, and loads into the same `nn.Sequential` unchanged.

/// Flattens each sample to a vector in channels-first order, e.g. `Flatten(5×5×64→1600)`; no parameters.
public struct Flatten<Scalar: TensorScalar>: Layer {
    public let inputShape: [Int]

    /// What forward computes and backward's own buffer; sized when a batch shape is first seen.
    public struct Cache: Sendable {
        /// `(batch, channels · height · width)`.
        public var output = Tensor<Scalar>(zeros: [0, 0])
        /// `dx`, like the input, only when asked for.
        public var inputGradient = Tensor<Scalar>(zeros: [0, 0])
    }

    /// The layer's caches.
    public private(set) var cache = Cache()

    /// Flattens samples of shape `input`: `(height, width, channels)` images are read channel by
    /// channel; any other shape is already in order.
    /// - Throws: ``NetworkError/invalidLayer(_:reason:)`` for an empty or non-positive shape.
    public init(input: [Int]) throws(NetworkError) {
        guard !input.isEmpty, input.allSatisfy({ $0 >= 1 }), input.count <= 8 else {
            throw .invalidLayer("Flatten", reason: "takes samples of 1 to 8 dimensions, each at least 1, got \(TensorError.format(input))")
        }
        guard heldCount(input) != nil else { throw .invalidLayer("Flatten", reason: "\(TensorError.format(input)) is more than can be held") }
        inputShape = input
    }

    public var description: String { "Flatten(\(imageDescription(inputShape))→\(inputShape.reduce(1, *)))" }

    public var outputShape: [Int] { [inputShape.reduce(1, *)] }
    public var parameterShapes: [(name: String, shape: [Int])] { [] }

    /// `(pixels, channels)`: the matrix each sample is transposed as (`channels` 1 for a non-image).
    var plane: (pixels: Int, channels: Int) {
        inputShape.count == 3 ? (inputShape[0] * inputShape[1], inputShape[2]) : (inputShape.reduce(1, *), 1)
    }

    public func converted<Other: TensorScalar>(to: Other.Type) -> any Layer<Other> { try! Flatten<Other>(input: inputShape) }

    public var output: Tensor<Scalar> { cache.output }
    public var inputGradient: Tensor<Scalar> { cache.inputGradient }

    public func initialize(
        parameters: UnsafeMutableBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>,
        using generator: inout SeededGenerator
    ) {}

    /// Each sample's `(pixels, channels)` matrix transposed to `(channels, pixels)`.
    public mutating func forward(
        _ x: Tensor<Scalar>, parameters: UnsafeBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>,
        mode: LayerMode
    ) {
        // x: (batch, height, width, channels)  →  y: (batch, channels · height · width)
        let batch = x.shape[0], (pixels, channels) = plane
        cache.output.resize(rows: batch, columns: pixels * channels)
        x.withUnsafeBufferPointer { px in
            cache.output.withUnsafeMutableBufferPointer { py in
                Kernels.transposeEach(px, count: batch, rows: pixels, columns: channels, into: py)
            }
        }
    }

    /// The transpose back: `dx` is `dy` in channels-last order.
    public mutating func backward(
        input x: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>,
        parameters: UnsafeBufferPointer<Scalar>, gradients: UnsafeMutableBufferPointer<Scalar>,
        computeInputGradient: Bool
    ) {
        guard computeInputGradient else { return }
        let batch = x.shape[0], (pixels, channels) = plane
        cache.inputGradient.resize(rows: batch, columns: pixels * channels)
        dy.withUnsafeBufferPointer { pdy in
            cache.inputGradient.withUnsafeMutableBufferPointer { pdx in
                Kernels.transposeEach(pdy, count: batch, rows: channels, columns: pixels, into: pdx)
            }
        }
    }
}
