// Average pooling: each window's mean, channel by channel; backward shares each output's gradient
// evenly among its window's pixels. Global average pooling is the window as large as the image.

/// Average pooling over channels-last images, e.g. `AvgPool2D(8×8×64→1×1×64, global)`; no parameters.
public struct AvgPool2D<Scalar: TensorScalar>: Layer {
    /// The window (no padding: every window lies inside the image, and each mean is over
    /// `kernelHeight · kernelWidth` pixels, PyTorch's `AvgPool2d` divisor).
    public let window: Window2D

    /// What forward computes and backward's own buffer; sized when a batch shape is first seen.
    public struct Cache: Sendable {
        /// `(batch, outputHeight · outputWidth · channels)`.
        public var output = Tensor<Scalar>(zeros: [0, 0])
        /// `dx`, like the input, only when asked for.
        public var inputGradient = Tensor<Scalar>(zeros: [0, 0])
    }

    /// The layer's caches.
    public private(set) var cache = Cache()

    /// Average pooling with a `size` window moving by `stride` (by default, the window's own size).
    /// - Throws: ``NetworkError/invalidLayer(_:reason:)`` when the window does not fit the image, naming both.
    public init(input: [Int], size: (height: Int, width: Int), stride: (height: Int, width: Int)? = nil) throws(NetworkError) {
        window = try Window2D(
            input: input, kernel: size, stride: stride ?? size, padding: .valid,
            layer: "AvgPool2D(\(imageDescription(input)), \(size.height)×\(size.width))")
    }

    /// Global average pooling: one mean per channel over the whole image, `(h, w, c) → (1, 1, c)`.
    /// - Throws: ``NetworkError/invalidLayer(_:reason:)`` unless `input` is an image shape.
    public static func global(input: [Int]) throws(NetworkError) -> AvgPool2D {
        guard input.count == 3 else {
            throw .invalidLayer("AvgPool2D(global)", reason: "takes images of shape (height, width, channels), got \(TensorError.format(input))")
        }
        return try AvgPool2D(input: input, size: (input[0], input[1]))
    }

    /// Whether the window covers the whole image.
    public var isGlobal: Bool {
        window.outputHeight == 1 && window.outputWidth == 1 && window.kernelHeight == window.height && window.kernelWidth == window.width
    }

    public var description: String {
        "AvgPool2D(\(imageDescription(inputShape))→\(imageDescription(outputShape)), "
            + (isGlobal ? "global)" : "\(window.describe(defaultStride: (window.kernelHeight, window.kernelWidth), showPadding: false)))")
    }

    public var inputShape: [Int] { [window.height, window.width, window.channels] }
    public var outputShape: [Int] { [window.outputHeight, window.outputWidth, window.channels] }
    public var parameterShapes: [(name: String, shape: [Int])] { [] }

    public func converted<Other: TensorScalar>(to: Other.Type) -> any Layer<Other> {
        try! AvgPool2D<Other>(
            input: inputShape, size: (window.kernelHeight, window.kernelWidth), stride: (window.strideHeight, window.strideWidth))
    }

    public var output: Tensor<Scalar> { cache.output }
    public var inputGradient: Tensor<Scalar> { cache.inputGradient }

    public func initialize(
        parameters: UnsafeMutableBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>,
        using generator: inout SeededGenerator
    ) {}

    /// Each window's mean.
    public mutating func forward(
        _ x: Tensor<Scalar>, parameters: UnsafeBufferPointer<Scalar>, state: UnsafeMutableBufferPointer<Scalar>,
        mode: LayerMode
    ) {
        // x: (batch, height·width·channels)  →  y: (batch, outputHeight·outputWidth·channels)
        let batch = x.shape[0], window = window
        cache.output.resize(rows: batch, columns: window.outputPixels * window.channels)
        x.withUnsafeBufferPointer { px in
            cache.output.withUnsafeMutableBufferPointer { py in Kernels.averagePool(px, batch: batch, window: window, into: py) }
        }
    }

    /// `dx` = each output's gradient over its window's area, on every pixel of the window.
    public mutating func backward(
        input x: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>,
        parameters: UnsafeBufferPointer<Scalar>, gradients: UnsafeMutableBufferPointer<Scalar>,
        computeInputGradient: Bool
    ) {
        guard computeInputGradient else { return }
        let batch = x.shape[0], window = window
        cache.inputGradient.resize(rows: batch, columns: window.inputPixels * window.channels)
        dy.withUnsafeBufferPointer { pdy in
            cache.inputGradient.withUnsafeMutableBufferPointer { pdx in
                Kernels.averagePoolBackward(pdy, batch: batch, window: window, into: pdx)
            }
        }
    }
}

extension Naive {
    /// The definition of ``AvgPool2D``: for every sample, output pixel and channel, the sum of its
    /// window divided by the window's area; each input gets that share of every output it feeds.
    ///
    ///     // x: (batch, height, width, channels), dy: (batch, outputHeight, outputWidth, channels)
    ///     // →  y: like dy, dx: like x
    public static func avgPool2d<Scalar>(
        _ x: Tensor<Scalar>, outputGradient dy: Tensor<Scalar>?, window: Window2D
    ) -> (output: Tensor<Scalar>, input: Tensor<Scalar>) {
        let (h, wd, c, oh, ow) = (window.height, window.width, window.channels, window.outputHeight, window.outputWidth)
        let batch = x.count / (h * wd * c), area = Scalar(window.kernelHeight * window.kernelWidth)
        var y = Tensor<Scalar>(zeros: [batch, oh, ow, c]), dx = Tensor<Scalar>(zeros: x.shape)
        for n in 0..<batch {
            for oy in 0..<oh {
                for ox in 0..<ow {
                    for ch in 0..<c {
                        let o = ((n * oh + oy) * ow + ox) * c + ch
                        var sum: Scalar = 0
                        for ky in 0..<window.kernelHeight {
                            for kx in 0..<window.kernelWidth {
                                let i = ((n * h + oy * window.strideHeight + ky) * wd + ox * window.strideWidth + kx) * c + ch
                                sum += x[i]
                                if let dy { dx[i] += dy[o] / area }
                            }
                        }
                        y[o] = sum / area
                    }
                }
            }
        }
        return (y, dx)
    }
}
